/**
 * Ceiling of the ingestion benchmark (TypeScript via tsx; no HTTP): the store alone, inserting
 * the same event row and one delivery-job row per event, in transactions of `batch` events,
 * for at most `maxEvents` events or `durationS` seconds. Answers {events, ms} over IPC.
 *
 *   - store 'sqlite' (default): better-sqlite3, the same schema as Ferry's SQLite store (its
 *     migrations, from the built `packages/server/dist`), WAL with `synchronous = FULL`, one
 *     connection (SQLite has one writer).
 *   - store 'postgres': a fresh schema on `databaseUrl` with Ferry's PostgreSQL migrations
 *     (through the built PgStore), `connections` concurrent connections each committing
 *     transactions of `batch` events (PostgreSQL commits concurrent transactions together);
 *     each transaction is one multi-row INSERT of the events (RETURNING their ids) and one of
 *     the jobs, the cheapest way to send 100 rows of each. The schema is dropped afterwards.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PgStore } from '../../../packages/server/dist/index.js';
import { migrations } from '../../../packages/server/dist/store/sqlite/migrations/index.js';
import { bigintAsNumber, eventJson } from './common.js';

interface Ask {
  id: number;
  durationS: number;
  maxEvents: number;
  batch: number;
  store?: 'sqlite' | 'postgres';
  databaseUrl?: string;
  connections?: number;
}

// Row contents of the same size as Ferry's: the normalised message (~480 B) and the webhook body (~330 B).
const stored = (id: string, i: number) =>
  eventJson(id, i).slice(0, -1) +
  `,"context":{"library":{"name":"analytics-node","version":"3.1.0"},"ip":"127.0.0.1"},"integrations":{},"originalTimestamp":"2025-01-01T12:00:00.000Z","receivedAt":"2025-01-01T12:00:00.100Z"}`;
const body = (id: string, i: number) => `{"version":1,` + eventJson(id, i).slice(1);

function sqliteCeiling(m: Ask): { events: number; ms: number } {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-bench-store-'));
  const db = new Database(join(dir, 'ferry.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  for (const mig of migrations) db.exec(mig.sql);
  const insertEvent = db.prepare(
    `INSERT INTO events (source_id, message_id, type, user_id, anonymous_id, event, received_at, json)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source_id, message_id) DO NOTHING RETURNING id`,
  );
  const insertDelivery = db.prepare(
    `INSERT INTO deliveries (destination_id, source_id, event_id, kind, message_id, user_id, body, created_at, next_attempt_at)
     VALUES (@destinationId, @sourceId, @eventId, @kind, @messageId, @userId, @body, @nowMs, @nowMs)`,
  );
  const tx = db.transaction((from: number, n: number, nowMs: number) => {
    for (let i = from; i < from + n; i++) {
      const id = `store-${i}`;
      const row = insertEvent.get('bench', id, 'track', `user-${i % 1000}`, null, 'Order Completed', nowMs, stored(id, i)) as { id: number };
      insertDelivery.run({
        destinationId: 'hooks',
        sourceId: 'bench',
        eventId: row.id,
        kind: 'event',
        messageId: id,
        userId: `user-${i % 1000}`,
        body: body(id, i),
        nowMs,
      });
    }
  });
  const started = performance.now();
  const deadline = started + m.durationS * 1000;
  let events = 0;
  while (events < m.maxEvents && performance.now() < deadline) {
    tx(events, m.batch, Date.now());
    events += m.batch;
  }
  const ms = performance.now() - started;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return { events, ms };
}

async function postgresCeiling(m: Ask): Promise<{ events: number; ms: number }> {
  const schema = `ferry_bench_store_${process.pid}_${Date.now().toString(36)}`;
  await (await PgStore.open({ connectionString: m.databaseUrl!, schema, poolSize: 1 })).close();
  const connections = m.connections ?? 10;
  const pool = new pg.Pool({
    connectionString: m.databaseUrl,
    max: connections,
    options: `-c search_path=${schema}`,
    types: bigintAsNumber,
    connectionTimeoutMillis: 5000,
  });
  try {
    const insertBatch = async (from: number, n: number, nowMs: number) => {
      const ids: string[] = [];
      const users: string[] = [];
      const json: string[] = [];
      const bodies: string[] = [];
      for (let i = from; i < from + n; i++) {
        const id = `store-${i}`;
        ids.push(id);
        users.push(`user-${i % 1000}`);
        json.push(stored(id, i));
        bodies.push(body(id, i));
      }
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const inserted = await client.query<{ id: number; message_id: string }>(
          `INSERT INTO events (source_id, message_id, type, user_id, anonymous_id, event, received_at, json)
           SELECT 'bench', m, 'track', u, NULL, 'Order Completed', $4, j FROM unnest($1::text[], $2::text[], $3::text[]) AS x(m, u, j)
           ON CONFLICT (source_id, message_id) DO NOTHING
           RETURNING id, message_id`,
          [ids, users, json, nowMs],
        );
        const idOf = new Map(inserted.rows.map((r) => [r.message_id, r.id]));
        // A job is its delivery row and its queue row, as the store writes them.
        await client.query(
          `WITH d AS (
             INSERT INTO deliveries (destination_id, source_id, event_id, kind, message_id, user_id, body, created_at, next_attempt_at)
             SELECT 'hooks', 'bench', e, 'event', m, u, b, $5, $5 FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS x(e, m, u, b)
             RETURNING id, destination_id, next_attempt_at)
           INSERT INTO delivery_queue (delivery_id, destination_id, next_attempt_at) SELECT id, destination_id, next_attempt_at FROM d`,
          [ids.map((id) => idOf.get(id)!), ids, users, bodies, nowMs],
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    };
    const started = performance.now();
    const deadline = started + m.durationS * 1000;
    let next = 0;
    let events = 0;
    const worker = async () => {
      while (next < m.maxEvents && performance.now() < deadline) {
        const from = next;
        next += m.batch;
        await insertBatch(from, m.batch, Date.now());
        events += m.batch;
      }
    };
    await Promise.all(Array.from({ length: connections }, worker));
    return { events, ms: performance.now() - started };
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await pool.end();
  }
}

// answer() reports its own failure to the parent, so nothing waits on it here.
process.on('message', (m: Ask) => void answer(m));

async function answer(m: Ask): Promise<void> {
  try {
    const r = m.store === 'postgres' ? await postgresCeiling(m) : sqliteCeiling(m);
    process.send!({ id: m.id, ...r });
  } catch (error) {
    process.send!({ id: m.id, error: String((error as Error).stack ?? error) });
  }
}
process.on('disconnect', () => process.exit(0));
