import { Option, type Command } from 'commander';
import { adminClient, adminGroup, withAdminFlags, type AdminFlags } from '../admin-command.js';
import { note, print, printJson, table } from '../output.js';

/** A token as `GET /tokens` lists it: never the token itself. */
interface TokenView {
  id: string;
  name: string;
  scope: 'admin' | 'read';
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** `ferry tokens create|ls|revoke`. */
export function registerTokens(program: Command): void {
  const group = adminGroup(program, 'tokens', 'admin API tokens: admin (everything) or read (no changes, no secrets)');

  withAdminFlags(
    group
      .command('create')
      .description('create a token; it is printed this once, and only its hash is kept')
      .requiredOption('--name <name>', 'what the token is for (shown in `ferry tokens ls` and the audit log)')
      .addOption(new Option('--scope <scope>', 'admin or read').choices(['admin', 'read']).makeOptionMandatory()),
  ).action(async (flags: AdminFlags & { name: string; scope: string }) => {
    const { body: created } = await adminClient(flags).request<TokenView & { token: string }>('POST', '/tokens', {}, { name: flags.name, scope: flags.scope });
    if (flags.json) return printJson(created);
    print(`created token ${created.id} "${created.name}" (scope ${created.scope})`);
    print(created.token);
    note('This is the only time the token is shown: store it now. Ferry keeps only its hash; a lost token is revoked and replaced.');
  });

  withAdminFlags(group.command('ls').description('list tokens, revoked ones included')).action(async (flags: AdminFlags) => {
    const answer = await adminClient(flags).get<{ tokens: TokenView[] }>('/tokens');
    if (flags.json) return printJson(answer);
    print(
      table(
        answer.tokens,
        [
          { heading: 'ID', value: (t) => t.id },
          { heading: 'NAME', value: (t) => t.name, maxWidth: 32 },
          { heading: 'SCOPE', value: (t) => t.scope },
          { heading: 'CREATED', value: (t) => t.createdAt },
          { heading: 'LAST USED', value: (t) => t.lastUsedAt },
          { heading: 'REVOKED', value: (t) => t.revokedAt },
        ],
        'no tokens (the bootstrap FERRY_ADMIN_TOKEN is not listed)',
      ),
    );
  });

  withAdminFlags(group.command('revoke').description('revoke a token: it stops working at once').argument('<id>', 'token id')).action(
    async (id: string, flags: AdminFlags) => {
      await adminClient(flags).request('DELETE', `/tokens/${encodeURIComponent(id)}`);
      if (flags.json) return printJson({ revoked: id });
      print(`revoked token ${id}`);
    },
  );
}
