import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { cleanups } from '../helpers/cleanups.js';
import { configDir, configFile, env, noSecretIn, run } from '../helpers/config-cli.js';
import { adminToken } from '../helpers/ferry.js';
import { spawnFerry } from '../helpers/spawn-ferry.js';
import { join } from 'node:path';

const dir = configDir(after);

describe('ferry config and a running server', () => {
  test('SQLite held by a server: the CLI says so and offers --url; through the server, the change is applied, logged and kept across a restart with that file', async (t) => {
    const onCleanup = cleanups(t);
    const dataDir = join(dir, 'held');
    const path = configFile(dir, 'held.yaml');
    const serverEnv = { ...env, FERRY_ADMIN_TOKEN: adminToken, FERRY_DATA_DIR: dataDir };
    const serve = (file: string) => {
      const server = spawnFerry(['serve', '--config', file, '--port', '0', '--host', '127.0.0.1'], serverEnv);
      onCleanup(async () => {
        server.child.kill('SIGKILL');
        await server.exited;
      });
      return server;
    };
    const server = serve(path);
    const [, base] = await server.waitForOutput(/listening on (http:\/\/\S+)/);

    const next = configFile(dir, 'held-next.yaml', { destinationName: 'CRM webhooks' });
    const local = await run(['config', 'apply', '--config', next], { ...env, FERRY_DATA_DIR: dataDir });
    assert.equal(local.code, 1);
    assert.match(
      local.output,
      /^ferry: the SQLite store at \S*ferry\.db is held by a running Ferry server .*add --url http:\/\/<host>:<port> with its admin token in FERRY_ADMIN_TOKEN$/m,
    );

    const noToken = await run(['config', 'plan', '--config', next, '--url', base!], { ...env, FERRY_ADMIN_TOKEN: '' });
    assert.equal(noToken.code, 1);
    assert.match(noToken.output, /^ferry: --url needs the admin token of the server in FERRY_ADMIN_TOKEN$/m);
    const wrongToken = await run(['config', 'plan', '--config', next, '--url', base!], { ...env, FERRY_ADMIN_TOKEN: 'x'.repeat(40) });
    assert.equal(wrongToken.code, 1);
    assert.match(wrongToken.output, /^ferry: the server answered 401: admin_unauthorized: /m);

    const remote = await run(['config', 'apply', '--config', next, '--url', base!], { ...env, FERRY_ADMIN_TOKEN: adminToken });
    assert.equal(remote.code, 0, remote.output);
    assert.match(remote.output, /^~ destination crm-hooks: name: CRM hooks -> CRM webhooks$/m);
    assert.match(remote.output, /^Applied: 0 created, 1 updated, 1 unchanged, 0 kept\.$/m);
    const view = await fetch(`${base}/admin/v1/destinations/crm-hooks`, { headers: { authorization: `Bearer ${adminToken}` } });
    assert.equal(((await view.json()) as { name: string }).name, 'CRM webhooks', 'the server reloaded its catalogue');
    await server.waitForOutput(/"msg":"POST \/admin\/v1\/config\/apply changed destination crm-hooks: name"/);

    const exported = await run(['config', 'export', '--url', base!], { FERRY_ADMIN_TOKEN: adminToken });
    assert.equal(exported.code, 0, exported.output);
    assert.match(exported.output, /name: CRM webhooks/);
    assert.match(exported.output, /writeKey: \$\{FERRY_SOURCE_APP_WRITE_KEY\}/);
    noSecretIn(exported.output + remote.output + server.output());

    server.child.kill('SIGTERM');
    assert.equal((await server.waitForExit()).code, 0, server.output());
    // The hash the server stored is the one a start computes from the same file: nothing changes.
    const restarted = serve(next);
    await restarted.waitForOutput(/sources: app; destinations: crm-hooks/);
    assert.doesNotMatch(restarted.output(), /created|changed/);
  });
});
