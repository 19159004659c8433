import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { createFerry } from '../../src/app.js';
import { configFromObject, loadConfigFile } from '../../src/config/load.js';
import type { FerryConfig } from '../../src/config/model.js';
import { readAppliedConfig } from '../../src/control/applied-config.js';
import { applyCatalog } from '../../src/control/catalog-apply.js';
import { exportCatalog } from '../../src/control/catalog-export.js';
import { planCatalog } from '../../src/control/catalog-plan.js';
import { catalogHash } from '../../src/control/config-hash.js';
import { builtInDestinationTypes } from '../../src/destinations/registry.js';
import { FerryError } from '../../src/errors/error-codes.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { ManualClock } from '../../src/util/clock.js';
import { capturedLogger } from '../helpers/captured-logger.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken } from '../helpers/ferry.js';
import { freshSchema, stopPostgres } from '../helpers/postgres.js';
import { within } from '../helpers/within.js';

after(() => stopPostgres());

/** One database a test starts servers on again and again: a SQLite file, or a PostgreSQL schema. */
interface Place {
  open(): Promise<Store>;
}

async function place(kind: 'sqlite' | 'postgres', onCleanup: (fn: () => Promise<void> | void) => void): Promise<Place> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-config-'));
    onCleanup(() => rmSync(dir, { recursive: true, force: true }));
    return { open: async () => new SqliteStore({ path: join(dir, 'ferry.db') }) };
  }
  const { url, schema } = await freshSchema(onCleanup);
  return { open: () => PgStore.open({ connectionString: url, schema }) };
}

const secrets = {
  writeKey: 'wk-file-0123456789abcdef',
  sharedSecret: 'file-shared-secret',
  header: 'Bearer file-header-secret',
  urlToken: 'file-url-secret',
  apiWriteKey: 'wk-api-rotated-0123456789',
  apiSharedSecret: 'api-shared-secret',
  apiHeader: 'Bearer api-header-secret',
  apiUrlToken: 'api-url-secret',
};

/** The file as the tests write it; `name` and `more` vary it. */
function fileConfig(options: { name?: string; sharedSecret?: string; extraDestination?: boolean } = {}): FerryConfig {
  const hooks = (id: string) => ({
    id,
    type: 'Webhooks',
    name: options.name ?? 'CRM hooks',
    sources: ['app'],
    settings: {
      webhooks: [{ url: `https://hooks.example.com/in?token=${secrets.urlToken}`, headers: { Authorization: secrets.header } }],
      sharedSecret: options.sharedSecret ?? secrets.sharedSecret,
    },
  });
  return configFromObject(
    {
      sources: [{ id: 'app', name: 'App', writeKey: secrets.writeKey }],
      destinations: options.extraDestination ? [hooks('crm-hooks'), hooks('old-hooks')] : [hooks('crm-hooks')],
    },
    'test config',
  );
}

/** A server on the place's database, stopped by the test's cleanups if the test does not stop it. */
async function startOn(where: Place, config: FerryConfig, onCleanup: (fn: () => Promise<void> | void) => void, options: { clock?: ManualClock } = {}) {
  const { logger, lines } = capturedLogger();
  const ferry = await createFerry({ config, store: await where.open(), adminToken, logger, deliver: false, clock: options.clock, catalogRefreshMs: 0 });
  const base = await within(30_000, 'the server to start', ferry.start(0, '127.0.0.1'));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await within(30_000, 'the server to stop', ferry.stop());
  };
  onCleanup(stop);
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };
  /** The lines the configuration's application logged at warn. */
  const warnings = () => lines.filter((l) => l.level === 40);
  return { ferry, base, lines, warnings, admin, stop };
}

const editedDestination = {
  type: 'Webhooks',
  name: 'CRM hooks',
  sources: ['app'],
  settings: {
    webhooks: [{ url: `https://hooks.example.com/in?token=${secrets.apiUrlToken}`, headers: { Authorization: secrets.apiHeader } }],
    sharedSecret: secrets.apiSharedSecret,
  },
};

function noSecretIn(text: string): void {
  for (const secret of Object.values(secrets)) assert.ok(!text.includes(secret), `${secret} leaked`);
}

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`the configuration and the store (${kind})`, () => {
    test('the file is applied at the first start, not at a restart with the same file, and again once it changed', async (t) => {
      const onCleanup = cleanups(t);
      const where = await place(kind, onCleanup);
      const first = await startOn(where, fileConfig(), onCleanup);
      // Into an empty store: creations override nothing, and are said at info.
      assert.deepEqual(first.warnings(), []);
      assert.deepEqual(
        first.lines.filter((l) => l.action === 'create').map((l) => [l.msg, l.level]),
        [
          ['the configuration file created source app', 30],
          ['the configuration file created destination crm-hooks', 30],
        ],
      );
      noSecretIn(JSON.stringify(first.lines));
      assert.equal((await readAppliedConfig(first.ferry.store))?.sha256, catalogHash(fileConfig()));
      await first.stop();

      const same = await startOn(where, fileConfig(), onCleanup);
      assert.deepEqual(same.warnings(), [], 'the same file again: nothing changed, nothing logged at warn');
      assert.ok(same.lines.some((l) => l.level === 30 && /is the one last applied/.test(l.msg)));
      await same.stop();

      const changed = await startOn(where, fileConfig({ name: 'CRM webhooks' }), onCleanup);
      assert.deepEqual(
        changed.warnings().map((l) => [l.kind, l.id, l.field, l.old, l.new, l.overridesEdit]),
        [['destination', 'crm-hooks', 'name', 'CRM hooks', 'CRM webhooks', false]],
      );
      assert.equal(changed.ferry.catalog.destination('crm-hooks')?.name, 'CRM webhooks');
    });

    test('edits made through the admin API survive a restart with the same file: a rotated write key, a disabled destination', async (t) => {
      const onCleanup = cleanups(t);
      const where = await place(kind, onCleanup);
      const first = await startOn(where, fileConfig(), onCleanup);
      assert.equal((await first.admin('PUT', '/sources/app', { name: 'App', writeKey: secrets.apiWriteKey })).status, 200);
      assert.equal((await first.admin('PATCH', '/destinations/crm-hooks', { enabled: false })).status, 200);
      await first.stop();

      const again = await startOn(where, fileConfig(), onCleanup);
      assert.deepEqual(again.warnings(), []);
      assert.equal(again.ferry.catalog.source('app')?.writeKey, secrets.apiWriteKey);
      assert.equal(again.ferry.catalog.destination('crm-hooks')?.enabled, false);
      const send = (key: string) =>
        fetch(`${again.base}/v1/track`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Basic ' + Buffer.from(`${key}:`).toString('base64') },
          body: JSON.stringify({ userId: 'u', event: 'E' }),
        }).then(async (res) => (await res.text(), res.status));
      assert.equal(await send(secrets.apiWriteKey), 200, 'the rotated key is the one in force');
      assert.equal(await send(secrets.writeKey), 401, "the file's old key did not come back");
    });

    test('a changed file overrides an admin edit: each field logged at warn, secrets masked, the edit flagged', async (t) => {
      const onCleanup = cleanups(t);
      const where = await place(kind, onCleanup);
      const first = await startOn(where, fileConfig({ extraDestination: true }), onCleanup);
      assert.equal((await first.admin('PUT', '/destinations/crm-hooks', editedDestination)).status, 200);
      assert.equal((await first.admin('PUT', '/sources/app', { name: 'App', writeKey: secrets.apiWriteKey })).status, 200);
      await first.stop();

      // The new file renames the destination and no longer names old-hooks.
      const next = await startOn(where, fileConfig({ name: 'CRM webhooks' }), onCleanup);
      const lines = next
        .warnings()
        .map((l) => ({ kind: l.kind, id: l.id, action: l.action, field: l.field, old: l.old, new: l.new, overridesEdit: l.overridesEdit }));
      assert.deepEqual(lines, [
        { kind: 'source', id: 'app', action: 'update', field: 'writeKey', old: '[redacted]', new: '[redacted]', overridesEdit: true },
        { kind: 'destination', id: 'crm-hooks', action: 'update', field: 'name', old: 'CRM hooks', new: 'CRM webhooks', overridesEdit: true },
        {
          kind: 'destination',
          id: 'crm-hooks',
          action: 'update',
          field: 'settings.webhooks[0].url',
          old: 'https://hooks.example.com/in?token=[redacted]',
          new: 'https://hooks.example.com/in?token=[redacted]',
          overridesEdit: true,
        },
        {
          kind: 'destination',
          id: 'crm-hooks',
          action: 'update',
          field: 'settings.webhooks[0].headers.Authorization',
          old: '[redacted]',
          new: '[redacted]',
          overridesEdit: true,
        },
        { kind: 'destination', id: 'crm-hooks', action: 'update', field: 'settings.sharedSecret', old: '[redacted]', new: '[redacted]', overridesEdit: true },
        { kind: 'destination', id: 'old-hooks', action: 'kept', field: undefined, old: undefined, new: undefined, overridesEdit: undefined },
      ]);
      assert.match(
        next.warnings()[1]!.msg,
        /the configuration file changed destination crm-hooks: name, overriding an edit made since the last configuration was applied/,
      );
      noSecretIn(JSON.stringify(next.lines));
      // The file won where it spoke; the object it no longer names is left as it was.
      const stored = next.ferry.catalog.destination('crm-hooks')!;
      assert.deepEqual(stored.settings, fileConfig().destinations[0]!.settings);
      assert.equal(next.ferry.catalog.source('app')?.writeKey, secrets.writeKey);
      assert.ok(next.ferry.catalog.destination('old-hooks'), 'an object the file no longer names is kept');
    });

    test('a secret changed in the environment is a changed file; the write-key clash with a source the file does not name stops the start', async (t) => {
      const onCleanup = cleanups(t);
      const where = await place(kind, onCleanup);
      const dir = mkdtempSync(join(tmpdir(), 'ferry-config-file-'));
      onCleanup(() => rmSync(dir, { recursive: true, force: true }));
      const path = join(dir, 'ferry.config.yaml');
      writeFileSync(
        path,
        'sources:\n  - id: app\n    writeKey: ${APP_KEY}\ndestinations:\n  - id: d\n    type: Webhooks\n    sources: [app]\n    settings:\n      webhookUrl: https://h.example.com/x\n      sharedSecret: ${HOOK_SECRET}\n',
      );
      const env = { APP_KEY: secrets.writeKey, HOOK_SECRET: secrets.sharedSecret };
      const first = await startOn(where, loadConfigFile(path, env), onCleanup);
      await first.stop();
      const rotated = await startOn(where, loadConfigFile(path, { ...env, HOOK_SECRET: secrets.apiSharedSecret }), onCleanup);
      assert.deepEqual(
        rotated.warnings().map((l) => [l.id, l.field, l.old, l.new]),
        [['d', 'settings.sharedSecret', '[redacted]', '[redacted]']],
      );
      assert.equal((rotated.ferry.catalog.destination('d')?.settings as { sharedSecret: string }).sharedSecret, secrets.apiSharedSecret);
      assert.equal((await rotated.admin('POST', '/sources', { id: 'by-api', writeKey: 'wk-by-api-0123456789' })).status, 201);
      await rotated.stop();

      // A new file whose source takes the key of the source made through the API.
      const clash = configFromObject({ sources: [{ id: 'app', writeKey: 'wk-by-api-0123456789' }] }, 'test config');
      const store = await where.open();
      const { logger } = capturedLogger();
      await assert.rejects(
        createFerry({ config: clash, store, adminToken, logger, deliver: false }),
        (e: unknown) => e instanceof FerryError && e.code === 'conflict' && /source app uses the write key of source by-api/.test(e.message),
      );
      await store.close();
    });

    test('plan, apply and export on the store: export then apply is a no-op', async (t) => {
      const onCleanup = cleanups(t);
      const where = await place(kind, onCleanup);
      const server = await startOn(where, fileConfig(), onCleanup);
      assert.equal((await server.admin('POST', '/destinations', { ...editedDestination, id: 'made-by-api', name: 'Made by API' })).status, 201);
      await server.stop();

      const store = await where.open();
      onCleanup(() => store.close());
      const types = builtInDestinationTypes;
      const before = await store.loadCatalog();
      const exported = exportCatalog(before, types, new Date());
      noSecretIn(exported.yaml);
      const dir = mkdtempSync(join(tmpdir(), 'ferry-export-'));
      onCleanup(() => rmSync(dir, { recursive: true, force: true }));
      const path = join(dir, 'exported.yaml');
      writeFileSync(path, exported.yaml);
      const values: Record<string, string> = {
        FERRY_SOURCE_APP_WRITE_KEY: secrets.writeKey,
        FERRY_DESTINATION_CRM_HOOKS_WEBHOOKS_0_URL: `https://hooks.example.com/in?token=${secrets.urlToken}`,
        FERRY_DESTINATION_CRM_HOOKS_WEBHOOKS_0_HEADERS_AUTHORIZATION: secrets.header,
        FERRY_DESTINATION_CRM_HOOKS_SHARED_SECRET: secrets.sharedSecret,
        FERRY_DESTINATION_MADE_BY_API_WEBHOOKS_0_URL: `https://hooks.example.com/in?token=${secrets.apiUrlToken}`,
        FERRY_DESTINATION_MADE_BY_API_WEBHOOKS_0_HEADERS_AUTHORIZATION: secrets.apiHeader,
        FERRY_DESTINATION_MADE_BY_API_SHARED_SECRET: secrets.apiSharedSecret,
      };
      assert.deepEqual(exported.variables.map((v) => v.name).sort(), Object.keys(values).sort());
      const config = loadConfigFile(path, values);
      const plan = planCatalog(before, config, { types, applied: await readAppliedConfig(store) });
      assert.deepEqual(
        plan.map((c) => [c.action, c.id]),
        [
          ['unchanged', 'app'],
          ['unchanged', 'crm-hooks'],
          ['unchanged', 'made-by-api'],
        ],
      );
      const { logger, lines } = capturedLogger();
      const applied = await applyCatalog(store, config, { types, logger, clock: new ManualClock(), origin: 'the test' });
      assert.deepEqual(applied, plan);
      assert.deepEqual(
        lines.filter((l) => l.level === 40),
        [],
      );
      assert.deepEqual(await store.loadCatalog(), before);
      assert.equal((await readAppliedConfig(store))?.sha256, catalogHash(config), 'the export is now the last configuration applied');
    });

    test('POST /admin/v1/config/plan and /apply: the answer, the warn lines, the reload; a restart with the same configuration changes nothing', async (t) => {
      const onCleanup = cleanups(t);
      const where = await place(kind, onCleanup);
      const server = await startOn(where, fileConfig(), onCleanup);
      const next = fileConfig({ name: 'CRM webhooks' });
      const body = { config: { sources: next.sources, destinations: next.destinations } };
      const plan = await server.admin('POST', '/config/plan', body);
      assert.equal(plan.status, 200);
      assert.deepEqual(plan.json.summary, { create: 0, update: 1, unchanged: 1, kept: 0 });
      assert.equal(plan.json.applied, false);
      assert.equal(server.ferry.catalog.destination('crm-hooks')?.name, 'CRM hooks', 'a plan changes nothing');
      const warnedBefore = server.warnings().length;
      const applied = await server.admin('POST', '/config/apply', body);
      assert.equal(applied.status, 200);
      assert.equal(applied.json.applied, true);
      assert.deepEqual(applied.json.changes[1], {
        action: 'update',
        kind: 'destination',
        id: 'crm-hooks',
        fields: [{ path: 'name', old: 'CRM hooks', new: 'CRM webhooks' }],
      });
      assert.equal(server.ferry.catalog.destination('crm-hooks')?.name, 'CRM webhooks', 'this server reloaded');
      assert.deepEqual(
        server
          .warnings()
          .slice(warnedBefore)
          .map((l) => l.msg),
        ['POST /admin/v1/config/apply changed destination crm-hooks: name'],
      );
      noSecretIn(JSON.stringify(plan.json) + JSON.stringify(applied.json));
      // Bad input: a broken rule, an unknown key, a clash.
      const broken = await server.admin('POST', '/config/plan', { config: { sources: [{ id: 'Bad Id', writeKey: 'k' }] } });
      assert.equal(broken.status, 400);
      assert.equal(broken.json.errors[0].code, 'invalid_settings');
      assert.equal(broken.json.errors[0].path, 'config.sources[0].id');
      const unknown = await server.admin('POST', '/config/apply', { file: 'sources: []' });
      assert.equal(unknown.status, 400);
      assert.equal(unknown.json.errors[0].code, 'unknown_parameter');
      const literal = await server.admin('POST', '/config/plan', { config: { sources: [{ id: 'x', writeKey: '${FERRY_ADMIN_TOKEN}' }] } });
      assert.equal(literal.status, 200, 'a ${…} sent to the server is a literal, never expanded');
      assert.equal(literal.json.changes[0].fields[2].path, 'writeKey');
      await server.stop();

      const restarted = await startOn(where, next, onCleanup);
      assert.deepEqual(restarted.warnings(), [], 'the apply recorded the configuration: the same file at a restart changes nothing');
    });
  });
}

test('two applies of different files at once on two PostgreSQL stores never interleave: the store is one file whole, and the hash recorded is its own', async (t) => {
  const onCleanup = cleanups(t);
  const where = await place('postgres', onCleanup);
  const [a, b] = [await where.open(), await where.open()];
  onCleanup(() => Promise.all([a.close(), b.close()]).then(() => {}));
  const clock = new ManualClock();
  const { logger } = capturedLogger();
  const options = { types: builtInDestinationTypes, logger, clock, origin: 'a test' };
  const first = fileConfig({ name: 'First', extraDestination: true });
  const second = fileConfig({ name: 'Second', sharedSecret: 'second-shared-secret' });
  for (let round = 0; round < 5; round++) {
    await Promise.all([applyCatalog(a, first, options), applyCatalog(b, second, options)]);
    const stored = await a.loadCatalog();
    const recorded = await readAppliedConfig(a);
    const last = recorded?.sha256 === catalogHash(first) ? first : second;
    assert.ok(recorded?.sha256 === catalogHash(last), 'the hash recorded is one of the two files');
    // Whichever went last set every object it names; none of them holds the other file's values.
    for (const d of last.destinations)
      assert.deepEqual(
        stored.destinations.find((s) => s.id === d.id),
        d,
        `${d.id} is the last file's`,
      );
  }
});
