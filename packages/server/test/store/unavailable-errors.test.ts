/**
 * Each store tells its own database's "unavailable" errors (503, not ready) from Ferry's
 * faults (500), on errors its driver really throws; neither claims the other dialect's codes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openFreshPgStore, stopPostgres } from '../helpers/postgres.js';

after(() => stopPostgres());

/** The error `fn` throws or rejects with. */
async function errorOf(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  assert.fail('expected an error');
}

test('SQLite: a read-only database is unavailable, a broken constraint is not, nor a PostgreSQL code', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-unavailable-'));
  const store = new SqliteStore({ path: join(dir, 'ferry.db') });
  try {
    const path = join(dir, 'other.db');
    const db = new Database(path);
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
    db.exec('INSERT INTO t VALUES (1)');
    const constraint = await errorOf(() => db.exec('INSERT INTO t VALUES (1)'));
    db.close();
    const readOnly = new Database(path, { readonly: true });
    const readOnlyWrite = await errorOf(() => readOnly.exec('INSERT INTO t VALUES (2)'));
    readOnly.close();
    assert.match((readOnlyWrite as { code: string }).code, /^SQLITE_READONLY/);
    assert.equal(store.isUnavailable(readOnlyWrite), true);
    assert.equal(store.isUnavailable(constraint), false);
    assert.equal(store.isUnavailable(Object.assign(new Error('terminating connection'), { code: '57P01' })), false);
    assert.equal(store.isUnavailable(new Error('no code')), false);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('PostgreSQL: a refused connection is unavailable, a syntax error is not, nor an SQLite code', async () => {
  const { store, cleanup, inSchema } = await openFreshPgStore(1);
  try {
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    const refused = await errorOf(async () => {
      const client = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:1/postgres', connectionTimeoutMillis: 5_000 });
      await client.connect();
    });
    const syntax = await errorOf(() => inSchema((client) => client.query('SELEC 1')));
    assert.equal((syntax as { code: string }).code, '42601');
    assert.equal(store.isUnavailable(refused), true);
    assert.equal(store.isUnavailable(syntax), false);
    assert.equal(store.isUnavailable(Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })), false);
  } finally {
    await store.close();
    await cleanup();
  }
});
