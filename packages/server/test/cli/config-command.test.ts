import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { createFerry } from '../../src/app.js';
import { configFromObject } from '../../src/config/load.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken } from '../helpers/ferry.js';
import { freshSchema, stopPostgres } from '../helpers/postgres.js';
import { spawnFerry } from '../helpers/spawn-ferry.js';
import { within } from '../helpers/within.js';

const dir = mkdtempSync(join(tmpdir(), 'ferry-config-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));
after(() => stopPostgres());

const env = { APP_KEY: 'wk-cli-0123456789abcdef', HOOK_SECRET: 'cli-shared-secret', HOOK_TOKEN: 'cli-url-token' };

/** A file with its secrets as `${VAR}` references; `enabled` and `name` vary it. */
function configFile(name: string, options: { enabled?: boolean; destinationName?: string } = {}): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    [
      'sources:',
      '  - id: app',
      '    name: App',
      '    writeKey: ${APP_KEY}',
      'destinations:',
      '  - id: crm-hooks',
      `    name: ${options.destinationName ?? 'CRM hooks'}`,
      '    type: Webhooks',
      `    enabled: ${options.enabled ?? true}`,
      '    sources: [app]',
      '    settings:',
      '      webhooks:',
      '        - url: https://hooks.example.com/in?token=${HOOK_TOKEN}',
      '      sharedSecret: ${HOOK_SECRET}',
      '',
    ].join('\n'),
  );
  return path;
}

async function run(args: string[], more: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const ferry = spawnFerry(args, more);
  const { code } = await ferry.waitForExit(60_000);
  return { code, output: ferry.output() };
}

function noSecretIn(text: string): void {
  for (const secret of Object.values(env)) assert.ok(!text.includes(secret), `${secret} leaked`);
}

describe('ferry config validate', () => {
  test('a good file: valid, naming what it holds; a bad one: status 1, one line per broken rule; no store is needed', async () => {
    const good = await run(['config', 'validate', '--config', configFile('good.yaml')], { ...env, FERRY_DATA_DIR: join(dir, 'never-made') });
    assert.equal(good.code, 0, good.output);
    assert.match(good.output, /good\.yaml: valid; 1 source \(app\), 1 destination \(crm-hooks\)$/m);
    const path = join(dir, 'bad.yaml');
    writeFileSync(
      path,
      'sources:\n  - id: App\n    writeKey: ${MISSING_KEY}\ndestinations:\n  - id: d\n    type: webhooks\n    sources: []\n    settings: {}\n',
    );
    const bad = await run(['config', 'validate', '--config', path], {});
    assert.equal(bad.code, 1);
    assert.match(bad.output, /^ferry: invalid configuration: \S*bad\.yaml: sources\[0\]\.writeKey: environment variable MISSING_KEY is not set/m);
    const typo = join(dir, 'typo.yaml');
    writeFileSync(typo, 'sources:\n  - id: App\n    writeKey: k\n');
    const rule = await run(['config', 'validate', '--config', typo], {});
    assert.equal(rule.code, 1);
    assert.match(rule.output, /typo\.yaml: sources\[0\]\.id: must match \[a-z0-9_-\]\+/);
  });
});

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`ferry config plan, apply and export (${kind})`, () => {
    test('plan before the first start, apply, plan again: no changes; export then apply with its variables set: a no-op', async (t) => {
      const onCleanup = cleanups(t);
      let storeEnv: Record<string, string>;
      if (kind === 'sqlite') storeEnv = { FERRY_DATA_DIR: join(dir, 'round-trip') };
      else {
        const { url, schema } = await freshSchema(onCleanup);
        storeEnv = { DATABASE_URL: url, FERRY_DATABASE_SCHEMA: schema };
      }
      const path = configFile(`round-trip-${kind}.yaml`);
      const all = { ...env, ...storeEnv };
      const plan = await run(['config', 'plan', '--config', path], all);
      assert.equal(plan.code, 0, plan.output);
      assert.match(plan.output, /^\+ source app$/m);
      assert.match(plan.output, /^\+ destination crm-hooks$/m);
      assert.match(plan.output, /^Plan: 2 to create, 0 to update, 0 unchanged, 0 kept\.$/m);

      const apply = await run(['config', 'apply', '--config', path], all);
      assert.equal(apply.code, 0, apply.output);
      assert.match(apply.output, /^Applied: 2 created, 0 updated, 0 unchanged, 0 kept\.$/m);

      const disabled = configFile(`round-trip-${kind}-disabled.yaml`, { enabled: false });
      const planned = await run(['config', 'plan', '--config', disabled, '--json'], all);
      assert.equal(planned.code, 0, planned.output);
      const answer = JSON.parse(planned.output.slice(planned.output.indexOf('{')));
      assert.deepEqual(answer.summary, { create: 0, update: 1, unchanged: 1, kept: 0 });
      assert.deepEqual(answer.changes[1].fields, [{ path: 'enabled', old: true, new: false }]);
      const rotated = await run(['config', 'plan', '--config', path], { ...all, HOOK_SECRET: 'another-secret' });
      assert.match(rotated.output, /^~ destination crm-hooks: settings\.sharedSecret: \[redacted\] -> \[redacted\] \(secret\)$/m);
      assert.match((await run(['config', 'plan', '--config', path], all)).output, /^No changes \(0 to create, 0 to update, 2 unchanged, 0 kept\)\.$/m);

      const out = join(dir, `exported-${kind}.yaml`);
      const exported = await run(['config', 'export', '--out', out], storeEnv);
      assert.equal(exported.code, 0, exported.output);
      assert.match(exported.output, /^ {2}FERRY_SOURCE_APP_WRITE_KEY {2}\(sources\[0\]\.writeKey\)$/m);
      assert.match(exported.output, /^ {2}FERRY_DESTINATION_CRM_HOOKS_SHARED_SECRET {2}\(destinations\[0\]\.settings\.sharedSecret\)$/m);
      const text = readFileSync(out, 'utf8');
      noSecretIn(text + exported.output + plan.output + apply.output + rotated.output);
      const values = {
        FERRY_SOURCE_APP_WRITE_KEY: env.APP_KEY,
        FERRY_DESTINATION_CRM_HOOKS_WEBHOOKS_0_URL: `https://hooks.example.com/in?token=${env.HOOK_TOKEN}`,
        FERRY_DESTINATION_CRM_HOOKS_SHARED_SECRET: env.HOOK_SECRET,
      };
      assert.equal((await run(['config', 'validate', '--config', out], values)).code, 0);
      const reapplied = await run(['config', 'apply', '--config', out, '--json'], { ...storeEnv, ...values });
      assert.equal(reapplied.code, 0, reapplied.output);
      const result = JSON.parse(reapplied.output.slice(reapplied.output.indexOf('{')));
      assert.deepEqual(result.summary, { create: 0, update: 0, unchanged: 2, kept: 0 });
      assert.equal(result.applied, true);
    });
  });
}

describe('ferry config and a running server', () => {
  test('SQLite held by a server: the CLI says so and offers --url; through the server, the change is applied, logged and kept across a restart with that file', async (t) => {
    const onCleanup = cleanups(t);
    const dataDir = join(dir, 'held');
    const path = configFile('held.yaml');
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

    const next = configFile('held-next.yaml', { destinationName: 'CRM webhooks' });
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

  test('PostgreSQL: an apply through the store reaches a running node at its next catalogue refresh', async (t) => {
    const onCleanup = cleanups(t);
    const { url, schema } = await freshSchema(onCleanup);
    const clock = new ManualClock();
    const refreshMs = 5000;
    const config = configFromObject(
      {
        sources: [{ id: 'app', name: 'App', writeKey: env.APP_KEY }],
        destinations: [
          {
            id: 'crm-hooks',
            name: 'CRM hooks',
            type: 'Webhooks',
            sources: ['app'],
            settings: { webhooks: [{ url: `https://hooks.example.com/in?token=${env.HOOK_TOKEN}` }], sharedSecret: env.HOOK_SECRET },
          },
        ],
      },
      'test config',
    );
    const node = await createFerry({
      config,
      store: await PgStore.open({ connectionString: url, schema }),
      adminToken,
      logger: pino({ level: 'silent' }),
      clock,
      catalogRefreshMs: refreshMs,
      deliver: false,
    });
    onCleanup(() => node.stop());
    await node.start(0, '127.0.0.1');
    const applied = await run(['config', 'apply', '--config', configFile('cluster.yaml', { enabled: false })], {
      ...env,
      DATABASE_URL: url,
      FERRY_DATABASE_SCHEMA: schema,
    });
    assert.equal(applied.code, 0, applied.output);
    assert.match(applied.output, /^~ destination crm-hooks: enabled: true -> false$/m);
    assert.equal(node.catalog.destination('crm-hooks')?.enabled, true, 'not before its next refresh');
    const reloaded = once(node.catalog, 'catalog:reloaded');
    clock.advance(refreshMs);
    await within(10_000, 'the catalogue refresh', reloaded);
    assert.equal(node.catalog.destination('crm-hooks')?.enabled, false);
  });
});
