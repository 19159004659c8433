/**
 * Helpers shared by the delivery-side benchmarks (TypeScript via tsx): filling a backlog
 * through Ferry's own ingestion API with the delivery worker off, copying it for each run,
 * waiting for a receiver to see N arrivals, and reading the final state of a database.
 */
import Database from 'better-sqlite3';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Child, type DestinationSpec, log, startChild, startFerry, waitUntil, writeConfig } from './common.js';

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

/** A copy of a stopped server's data directory (the WAL is checkpointed on a clean stop). */
export function copyData(from: string, to: string): string {
  mkdirSync(to, { recursive: true });
  for (const f of ['ferry.db', 'ferry.db-wal', 'ferry.db-shm']) if (existsSync(join(from, f))) copyFileSync(join(from, f), join(to, f));
  return to;
}

/** Waits until the receiver has seen `n` requests or `timeoutMs` passed; returns its stats. */
export async function waitForArrivals(receiver: Child, n: number, timeoutMs: number): Promise<{ count: number; signed: number; firstAt: number; lastAt: number }> {
  let stats = await receiver.ask({ cmd: 'stats' });
  await waitUntil(async () => {
    stats = await receiver.ask({ cmd: 'stats' });
    return stats.count >= n;
  }, timeoutMs, 200);
  return stats;
}

/** Rate of arrivals between the first and the last one. */
export const arrivalRate = (s: { count: number; firstAt: number; lastAt: number }): number =>
  s.count > 1 && s.lastAt > s.firstAt ? ((s.count - 1) / (s.lastAt - s.firstAt)) * 1000 : 0;

/** Delivery and attempt counts of a stopped server's database, per destination. */
export function deliveryCounts(dataDir: string): { byDestination: Record<string, Record<string, number>>; attempts: Record<string, number> } {
  const db = new Database(join(dataDir, 'ferry.db'), { readonly: true });
  try {
    const byDestination: Record<string, Record<string, number>> = {};
    for (const r of db.prepare(`SELECT destination_id AS d, status AS s, COUNT(*) AS n FROM deliveries GROUP BY 1, 2`).all() as { d: string; s: string; n: number }[])
      (byDestination[r.d] ??= {})[r.s] = r.n;
    const attempts: Record<string, number> = {};
    for (const r of db.prepare(`SELECT d.destination_id AS d, COUNT(*) AS n FROM attempts a JOIN deliveries d ON d.id = a.delivery_id GROUP BY 1`).all() as { d: string; n: number }[])
      attempts[r.d] = r.n;
    return { byDestination, attempts };
  } finally {
    db.close();
  }
}
