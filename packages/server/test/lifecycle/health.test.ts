/**
 * Liveness (`GET /health`) and readiness (`GET /health/ready`) of an in-process server: the
 * readiness check follows the store (here a database locked by another connection, which
 * SQLite reports like a full disk: writes fail, reads go on). Readiness during the drain is
 * tested on the real process, in cli/drain.test.ts; the full disk in faults/store-failure.test.ts.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { cleanups } from '../helpers/cleanups.js';
import { startFerry, testConfig } from '../helpers/ferry.js';
import { freshSchema } from '../helpers/postgres.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { ferryVersion } from '../../src/util/version.js';

const readiness = async (url: string) => {
  const res = await fetch(`${url}/health/ready`);
  return { status: res.status, json: (await res.json()) as any };
};

test('readiness fails while the store cannot write, and recovers by itself; liveness holds', async (t) => {
  const after = cleanups(t);
  const ferry = await startFerry(testConfig([]), { deliver: false });
  after(() => ferry.stop());
  assert.deepEqual(await readiness(ferry.url), { status: 200, json: { status: 'ready', version: ferryVersion, store: 'sqlite' } });

  const other = new Database(join(ferry.dataDir, 'ferry.db'));
  after(() => {
    if (other.inTransaction) other.prepare('ROLLBACK').run();
    other.close();
  });
  other.prepare('BEGIN IMMEDIATE').run();
  const refused = await ferry.send('/v1/track', { userId: 'u', event: 'E' });
  assert.equal(refused.status, 503);
  const during = await readiness(ferry.url);
  assert.equal(during.status, 503);
  assert.equal(during.json.errors[0].code, 'store_unavailable');
  assert.ok(!JSON.stringify(during.json).includes(ferry.dataDir) && !JSON.stringify(during.json).includes('ferry.db'), 'the answer names no file');
  assert.equal((await fetch(`${ferry.url}/health`)).status, 200, 'liveness does not follow the store');

  other.prepare('COMMIT').run();
  assert.equal((await readiness(ferry.url)).status, 200, 'the probe write succeeds, so the store is ready again');
  assert.equal((await ferry.send('/v1/track', { userId: 'u', event: 'E' })).status, 200);
});

test('on PostgreSQL, readiness asks the server', async (t) => {
  const after = cleanups(t);
  const { url, schema } = await freshSchema(after);
  const store = await PgStore.open({ connectionString: url, schema });
  const ferry = await startFerry(testConfig([]), { store, deliver: false });
  after(() => ferry.stop());
  const ready = await readiness(ferry.url);
  assert.deepEqual([ready.status, ready.json.store], [200, 'postgres']);
});
