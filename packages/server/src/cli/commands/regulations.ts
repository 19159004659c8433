import type { Command } from 'commander';
import type { Regulation } from '../../store/regulations-store.js';
import { adminClient, adminGroup, collect, pageLimitFlag, usage, withAdminFlags, type AdminFlags } from '../admin-command.js';
import { fields, print, printJson, table } from '../output.js';

interface RegulationPage {
  regulations: Regulation[];
  next: string | null;
}

/** `ferry regulations create|ls|show`: deletion requests. */
export function registerRegulations(program: Command): void {
  const group = adminGroup(program, 'regulations', "deletion requests: delete users' events and deliveries, and tell destinations");

  withAdminFlags(
    group
      .command('create')
      .description('request the deletion of users (carried out in the background; see `ferry regulations show`)')
      .option('--user <userId>', 'a user to delete (repeat for several, up to 1000)', collect)
      .option('--source <id>', 'only in this source (repeat for several; default every source)', collect),
  ).action(async (flags: AdminFlags & { user?: string[]; source?: string[] }) => {
    if (!flags.user || flags.user.length === 0) throw usage('name at least one user: --user <userId>');
    const body = { userIds: flags.user, ...(flags.source ? { sourceIds: flags.source } : {}) };
    const { body: created } = await adminClient(flags).request<{ id: string; status: string }>('POST', '/regulations', {}, body);
    if (flags.json) return printJson(created);
    print(
      `deletion request ${created.id} ${created.status} (${flags.user.length} user${flags.user.length === 1 ? '' : 's'}); follow it with: ferry regulations show ${created.id}`,
    );
  });

  withAdminFlags(
    group
      .command('ls')
      .description('list deletion requests with their status')
      .option('--status <status>', 'pending or done')
      .option('--limit <n>', 'requests per page, 1 to 1000 (default 100; 1000 with --all)')
      .option('--after <cursor>', 'start after this cursor (the `next` of the page before)')
      .option('--all', 'follow `next` to the last page'),
  ).action(async (flags: AdminFlags & { status?: string; limit?: string; after?: string; all?: boolean }) => {
    const client = adminClient(flags);
    const query = { status: flags.status, limit: pageLimitFlag(flags.limit) ?? (flags.all ? 1000 : undefined), after: flags.after };
    const page = await client.get<RegulationPage>('/regulations', query);
    const regulations = [...page.regulations];
    let next = page.next;
    while (flags.all && next !== null) {
      const more = await client.get<RegulationPage>('/regulations', { ...query, after: next });
      regulations.push(...more.regulations);
      next = more.next;
    }
    if (flags.json) return printJson({ regulations, next });
    print(
      table(
        regulations,
        [
          { heading: 'ID', value: (r) => r.id },
          { heading: 'STATUS', value: (r) => r.status },
          { heading: 'USERS', value: (r) => r.userCount },
          { heading: 'SOURCES', value: (r) => r.sourceIds?.join(',') ?? 'all', maxWidth: 32 },
          { heading: 'CREATED', value: (r) => r.createdAt },
          { heading: 'FINISHED', value: (r) => r.finishedAt },
          { heading: 'EVENTS DELETED', value: (r) => r.eventsDeleted },
          { heading: 'DELIVERIES DELETED', value: (r) => r.deliveriesDeleted },
          { heading: 'NOTICES', value: (r) => r.notificationsQueued },
        ],
        'no deletion requests',
      ),
    );
    if (next !== null) print(`more: --after ${next} (or --all)`);
  });

  withAdminFlags(group.command('show').description('show one deletion request and its progress').argument('<id>', 'deletion request id')).action(
    async (id: string, flags: AdminFlags) => {
      const regulation = await adminClient(flags).get<Regulation>(`/regulations/${encodeURIComponent(id)}`);
      if (flags.json) return printJson(regulation);
      const { linkedIdentities, sourceIds, ...rest } = regulation;
      print(
        fields([
          ...Object.entries(rest),
          ['sourceIds', sourceIds ?? 'all'],
          ['linkedFollowed', linkedIdentities?.followed],
          ['linkedSkipped', linkedIdentities?.skipped],
          ['linkedSkipReason', linkedIdentities?.reason],
        ]),
      );
    },
  );
}
