import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { configFromObject } from '../../src/config/load.js';
import { validateRetentionPatch } from '../../src/config/retention-schema.js';
import { defaultRetention } from '../../src/model/retention.js';
import { applyRetentionIfChanged } from '../../src/retention/retention-apply.js';
import { loadRetention, saveRetention } from '../../src/retention/retention-settings.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { capturedLogger } from '../helpers/captured-logger.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { adminCall, startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { freshSchema, stopPostgres } from '../helpers/postgres.js';

after(() => stopPostgres());

const config = (extra: Record<string, unknown> = {}) => testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])], extra);

async function openStore(kind: 'sqlite' | 'postgres', onCleanup: (fn: () => Promise<void>) => void): Promise<Store> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-retention-config-'));
    const store = new SqliteStore({ path: join(dir, 'ferry.db') });
    onCleanup(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    return store;
  }
  const { url, schema } = await freshSchema(onCleanup);
  const store = await PgStore.open({ connectionString: url, schema, poolSize: 2 });
  onCleanup(() => store.close());
  return store;
}

test("the file's retention section: kinds over the defaults, absent when the file has none, and its rules", () => {
  assert.deepEqual(config({ retention: { events: 7, auditLog: 0.5 } }).retention, { ...defaultRetention, events: 7, auditLog: 0.5 });
  assert.equal(config().retention, undefined);
  assert.throws(() => config({ retention: { events: -1 } }), /retention\.events/);
  assert.throws(() => config({ retention: { events: 40_000 } }), /retention\.events/);
  assert.throws(() => config({ retention: { events: '30' } }), /retention\.events/);
  assert.throws(() => config({ retention: { attempts: 3 } }), /unknown key; allowed keys here: events, delivered, deadLetters, rejections, auditLog/);
  assert.throws(() => configFromObject({ retention: [] }, 'f'), /retention/);
});

test('a patch of the retention holds the kinds it names, and no key for the others', () => {
  assert.deepEqual(validateRetentionPatch({ events: 14, auditLog: 0 }), { ok: true, patch: { events: 14, auditLog: 0 } });
  assert.deepEqual(validateRetentionPatch({}), { ok: true, patch: {} });
  assert.equal(validateRetentionPatch({ events: -1 }).ok, false);
});

for (const kind of storeKinds) {
  describe(`retention settings (${kind})`, () => {
    test('the file applies only when its section changed, so an admin change survives a restart with the same file', async (t) => {
      const store = await openStore(kind, cleanups(t));
      const { logger, lines } = capturedLogger();
      assert.deepEqual(await loadRetention(store), defaultRetention);
      const first = config({ retention: { events: 7 } }).retention;
      assert.equal(await applyRetentionIfChanged(store, first, logger), true);
      assert.deepEqual(await loadRetention(store), { ...defaultRetention, events: 7 });
      assert.deepEqual(
        lines.filter((l) => l.kind).map((l) => [l.kind, l.old, l.new]),
        [['events', 90, 7]],
      );

      // An admin change, then a restart with the same file: the change stands.
      await saveRetention(store, { ...defaultRetention, events: 3 });
      assert.equal(await applyRetentionIfChanged(store, config({ retention: { events: 7 } }).retention, logger), false);
      assert.equal((await loadRetention(store)).events, 3);
      // No section: nothing changes.
      assert.equal(await applyRetentionIfChanged(store, undefined, logger), false);
      // A changed file applies, as the whole retention it describes.
      assert.equal(await applyRetentionIfChanged(store, config({ retention: { delivered: 10 } }).retention, logger), true);
      assert.deepEqual(await loadRetention(store), { ...defaultRetention, delivered: 10 });
    });

    test('GET and PATCH /admin/v1/retention: validation, scopes, audit', async (t) => {
      const { server } = await startFerryOn(kind, config(), { deliver: false }, cleanups(t));
      const got = await adminCall(server.url, adminToken, 'GET', '/retention');
      assert.equal(got.status, 200);
      assert.deepEqual(got.json, defaultRetention);

      const patched = await adminCall(server.url, adminToken, 'PATCH', '/retention', { events: 14, auditLog: 365 });
      assert.equal(patched.status, 200, JSON.stringify(patched.json));
      assert.deepEqual(patched.json, { ...defaultRetention, events: 14, auditLog: 365 });
      assert.deepEqual((await adminCall(server.url, adminToken, 'GET', '/retention')).json, patched.json);

      const refusals: [unknown, string, string | undefined][] = [
        [{ events: -1 }, 'invalid_settings', 'events'],
        [{ delivered: 'forever' }, 'invalid_settings', 'delivered'],
        [{ attempts: 1 }, 'invalid_settings', undefined],
        [[1], 'bad_request', undefined],
      ];
      for (const [body, code, path] of refusals) {
        const r = await adminCall(server.url, adminToken, 'PATCH', '/retention', body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.json.errors[0].code, code);
        if (path !== undefined) assert.equal(r.json.errors[0].path, path);
      }
      assert.deepEqual((await adminCall(server.url, adminToken, 'GET', '/retention')).json, patched.json, 'a refused patch changes nothing');

      const reader = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'reader', scope: 'read' })).json.token as string;
      assert.equal((await adminCall(server.url, reader, 'GET', '/retention')).status, 200);
      const forbidden = await adminCall(server.url, reader, 'PATCH', '/retention', { events: 1 });
      assert.equal(forbidden.status, 403);
      assert.equal((await adminCall(server.url, undefined, 'GET', '/retention')).status, 401);

      const audit = (await adminCall(server.url, adminToken, 'GET', '/audit')).json.entries as { action: string; status: number; after: unknown }[];
      const updates = audit.filter((e) => e.action === 'retention.update');
      assert.equal(updates.length, 6, 'every change tried: the one that worked, four refused, one forbidden');
      const done = updates.find((e) => e.status === 200);
      assert.deepEqual(done?.after, patched.json);
    });
  });
}
