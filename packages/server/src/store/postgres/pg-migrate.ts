import type pg from 'pg';
import { migrations } from './migrations/index.js';
import { checkout } from './pg-pools.js';

/** Creates the schema if needed and applies pending migrations, one node at a time. */
export async function migrate(pool: pg.Pool, schema: string): Promise<void> {
  const client = await checkout(pool);
  try {
    // One node migrates at a time; the others wait, then find nothing left to do.
    await client.query(`SELECT pg_advisory_lock(hashtext('ferry_migrations_' || $1))`, [schema]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ferry_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`);
    // Each one applied is recorded, not the last: a migration numbered below one already
    // applied (branches merged in another order than they were numbered) still runs.
    const { rows } = await client.query<{ version: number }>(`SELECT version FROM ferry_migrations`);
    const applied = new Set(rows.map((r) => r.version));
    for (const m of migrations) {
      if (applied.has(m.version)) continue;
      await client.query('BEGIN');
      await client.query(m.sql);
      await client.query(`INSERT INTO ferry_migrations (version, applied_at) VALUES ($1, $2)`, [m.version, Date.now()]);
      await client.query('COMMIT');
    }
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    await client.query(`SELECT pg_advisory_unlock(hashtext('ferry_migrations_' || $1))`, [schema]).catch(() => {});
    client.done();
  }
}
