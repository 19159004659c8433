/**
 * Helpers shared by the delivery-side benchmarks (TypeScript via tsx): filling a backlog
 * through Ferry's own ingestion API with the delivery worker off, copying it for each run,
 * waiting for a receiver to see N arrivals, and reading the final state of a database —
 * the SQLite file in the data dir, or with `--store postgres` the data dir's schema.
 */
import Database from 'better-sqlite3';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  type Child,
  type DestinationSpec,
  databaseUrl,
  log,
  startChild,
  startFerry,
  trackSchema,
  usePostgres,
  waitUntil,
  withPg,
  writeConfig,
} from './common.js';

/** Ingests `events` events through /v1/batch into `dir/data` with delivery off; returns the data dir. */
export async function fillBacklog(dir: string, destinations: DestinationSpec[], events: number): Promise<string> {
  const dataDir = join(dir, 'data');
  const configPath = writeConfig(dir, destinations);
  const ferry = await startFerry({ configPath, dataDir, deliver: false });
  const client = startChild('client.ts');
  try {
    const started = Date.now();
    const r = await client.ask({ cmd: 'fill', url: ferry.url, events, concurrency: 16, prefix: `fill${Date.now()}`, timeoutMs: 600_000 });
    if (r.error || r.acked < events) throw new Error(`fill: only ${r.acked} of ${events} events accepted (${r.error ?? r.failed + ' failed'})`);
    log(`filled ${events.toLocaleString('en-US')} events in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    await client.stop();
    await ferry.stop();
  }
  return dataDir;
}

/**
 * A copy of a stopped server's data: its SQLite file (the WAL is checkpointed on a clean
 * stop), or with --store postgres its schema: a fresh schema with Ferry's migrations (opened
 * through the built PgStore), every table's rows copied, sequences moved past the copied ids,
 * then ANALYZE (as autovacuum would have done on a server that had been running).
 */
export async function copyData(from: string, to: string): Promise<string> {
  mkdirSync(to, { recursive: true });
  if (!usePostgres) {
    for (const f of ['ferry.db', 'ferry.db-wal', 'ferry.db-shm']) if (existsSync(join(from, f))) copyFileSync(join(from, f), join(to, f));
    return to;
  }
  const src = trackSchema(from);
  const dst = trackSchema(to);
  const { PgStore } = await import('../../../packages/server/dist/index.js');
  await (await PgStore.open({ connectionString: databaseUrl, schema: dst, poolSize: 1 })).close();
  await withPg(async (c) => {
    const tables = (
      await c.query<{ t: string }>(
        `SELECT table_name AS t FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' AND table_name <> 'ferry_migrations' ORDER BY 1`,
        [src],
      )
    ).rows.map((r) => r.t);
    await c.query('BEGIN');
    for (const t of tables) await c.query(`INSERT INTO ${dst}.${t} SELECT * FROM ${src}.${t}`);
    const serials = await c.query<{ t: string; col: string }>(
      `SELECT table_name AS t, column_name AS col FROM information_schema.columns WHERE table_schema = $1 AND column_default LIKE 'nextval(%'`,
      [dst],
    );
    for (const { t, col } of serials.rows)
      await c.query(`SELECT setval(pg_get_serial_sequence($1, $2), (SELECT COALESCE(MAX(${col}), 0) + 1 FROM ${dst}.${t}), false)`, [`${dst}.${t}`, col]);
    await c.query('COMMIT');
    for (const t of tables) await c.query(`ANALYZE ${dst}.${t}`);
  });
  return to;
}

/** Waits until the receiver has seen `n` requests or `timeoutMs` passed; returns its stats. `onCount` hears each count polled. */
export async function waitForArrivals(
  receiver: Child,
  n: number,
  timeoutMs: number,
  onCount?: (count: number) => void,
): Promise<{ count: number; signed: number; standardSigned?: number; firstAt: number; lastAt: number }> {
  let stats = await receiver.ask({ cmd: 'stats' });
  await waitUntil(
    async () => {
      stats = await receiver.ask({ cmd: 'stats' });
      onCount?.(stats.count);
      return stats.count >= n;
    },
    timeoutMs,
    onCount === undefined ? 200 : 100,
  );
  return stats;
}

/**
 * Rates of arrivals per stretch of 10,000 (the receiver's marks), first stretch from the first
 * arrival: whether a run was steady or sped up as it went (a client warming up).
 */
export const stretchRates = (s: { firstAt: number; marks?: number[] }): number[] =>
  (s.marks ?? []).map((t, i, all) => Math.round(10_000_000 / Math.max(1, t - (i > 0 ? all[i - 1]! : s.firstAt))));

/**
 * Rate of arrivals from the 10,000th (the receiver's first mark) to the last: the sender warmed
 * up (its code optimised, its connections open), where {@link arrivalRate} counts the start too.
 * Undefined for a run of fewer arrivals.
 */
export const steadyRate = (s: { count: number; lastAt: number; marks?: number[] }): number | undefined => {
  const from = s.marks?.[0];
  return from !== undefined && s.count > 10_000 && s.lastAt > from ? ((s.count - 10_000) / (s.lastAt - from)) * 1000 : undefined;
};

/** Rate of arrivals between the first and the last one. */
export const arrivalRate = (s: { count: number; firstAt: number; lastAt: number }): number =>
  s.count > 1 && s.lastAt > s.firstAt ? ((s.count - 1) / (s.lastAt - s.firstAt)) * 1000 : 0;

/** Runs read-only queries on a stopped server's data (SQLite file or PostgreSQL schema); rows' numbers as numbers. */
async function queryData<T>(dataDir: string, sqls: string[]): Promise<T[][]> {
  if (usePostgres)
    return withPg(async (c) => {
      const out: T[][] = [];
      for (const sql of sqls) out.push((await c.query(sql)).rows as T[]);
      return out;
    }, trackSchema(dataDir));
  const db = new Database(join(dataDir, 'ferry.db'), { readonly: true });
  try {
    return sqls.map((sql) => db.prepare(sql).all() as T[]);
  } finally {
    db.close();
  }
}

/**
 * Delivery and attempt counts of a stopped server's database, per destination. On PostgreSQL
 * a delivery's first attempt is kept in its own row (`first_attempt_log`, one entry per URL)
 * and later ones in `attempts`; both count.
 */
export async function deliveryCounts(dataDir: string): Promise<{ byDestination: Record<string, Record<string, number>>; attempts: Record<string, number> }> {
  const [statuses, ...attemptRows] = await queryData<{ d: string; s: string; n: number }>(dataDir, [
    `SELECT destination_id AS d, status AS s, COUNT(*) AS n FROM deliveries GROUP BY 1, 2`,
    `SELECT d.destination_id AS d, COUNT(*) AS n FROM attempts a JOIN deliveries d ON d.id = a.delivery_id GROUP BY 1`,
    ...(usePostgres
      ? [`SELECT destination_id AS d, SUM(json_array_length(first_attempt_log::json)) AS n FROM deliveries WHERE first_attempt_log IS NOT NULL GROUP BY 1`]
      : []),
  ]);
  const byDestination: Record<string, Record<string, number>> = {};
  for (const r of statuses!) (byDestination[r.d] ??= {})[r.s] = r.n;
  const attempts: Record<string, number> = {};
  for (const r of attemptRows.flat()) attempts[r.d] = (attempts[r.d] ?? 0) + Number(r.n);
  return { byDestination, attempts };
}

/** Events and delivery jobs committed in a stopped server's database. */
export async function committedCounts(dataDir: string): Promise<{ events: number; jobs: number }> {
  const [e, d] = await queryData<{ n: number }>(dataDir, [`SELECT COUNT(*) AS n FROM events`, `SELECT COUNT(*) AS n FROM deliveries`]);
  return { events: e![0]!.n, jobs: d![0]!.n };
}

/** Where the delivery reference (client.ts raw-post) reads the stored webhook bodies of a data dir. */
export function bodySource(dataDir: string): { dbPath: string } | { databaseUrl: string; schema: string } {
  return usePostgres ? { databaseUrl, schema: trackSchema(dataDir) } : { dbPath: join(dataDir, 'ferry.db') };
}
