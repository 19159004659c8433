/**
 * Benchmark 2, ingestion (TypeScript via tsx; the server under test is the built
 * `packages/server/dist`, run `npm run build` first).
 *
 * Durable accepted events/s through `POST /v1/batch` (batches of 100 track events of about
 * 300 bytes, `--connections` concurrent connections, closed-loop load from autocannon in its
 * own process), against two ceilings measured in the same run:
 *   - bare node:http: reads and JSON-parses the same bodies, answers 200, stores nothing;
 *   - store alone: better-sqlite3, same schema, event + job rows, transactions of 100, FULL sync;
 *     with `--store postgres`: the same rows into PostgreSQL (same schema, from Ferry's
 *     migrations), transactions of 100 on 10 concurrent connections (Ferry's pool size).
 * Goal: Ferry >= 0.5 x the lower ceiling, with every 200 meaning committed (checked after each
 * run: the events in the database >= the events acknowledged). The Ferry server runs with
 * one Webhooks destination (one job per event) and its delivery worker off (bench launcher),
 * so the number is ingestion alone. Reports the medians of `--runs` runs (default 3) and the
 * p50/p99 latency of the 200.
 *
 *   npx tsx bench/server/ingest.ts [--runs 3] [--seconds 8] [--connections 64] [--store postgres]
 */
import { join } from 'node:path';
import { committedCounts } from './lib/backlog.js';
import {
  databaseUrl,
  ensureStore,
  log,
  main,
  median,
  numFlag,
  printTable,
  removeDir,
  round,
  startChild,
  startFerry,
  storeKind,
  tempDir,
  usePostgres,
  writeConfig,
  writeResults,
} from './lib/common.js';

/** Concurrent connections of the PostgreSQL store ceiling: PgStore's default pool size. */
const pgCeilingConnections = 10;

export interface IngestSummary {
  ferryEventsPerSec: number;
  bareEventsPerSec: number;
  storeEventsPerSec: number;
  ratioToLowerCeiling: number;
  p50Ms: number;
  p99Ms: number;
  goalMet: boolean;
}

export async function runIngest(opts: { runs: number; seconds: number; connections: number }): Promise<IngestSummary> {
  await ensureStore();
  const runs: any[] = [];
  for (let r = 1; r <= opts.runs; r++) {
    log(`ingest run ${r}/${opts.runs}`);
    const client = startChild('client.ts');
    try {
      // Ceiling 1: bare node:http.
      const bare = startChild('bare-server.ts');
      const { port } = await bare.next('ready');
      const b = await client.ask({
        cmd: 'autocannon',
        url: `http://127.0.0.1:${port}`,
        connections: opts.connections,
        durationS: opts.seconds,
        maxRequests: 1_000_000,
        prefix: `bare${r}`,
      });
      await bare.stop();
      // Ceiling 2: the store alone.
      const store = startChild('store-ceiling.ts');
      const s = await store.ask({
        durationS: Math.min(opts.seconds, 5),
        maxEvents: 2_000_000,
        batch: 100,
        ...(usePostgres ? { store: 'postgres', databaseUrl, connections: pgCeilingConnections } : { store: 'sqlite' }),
      });
      if (s.error) throw new Error(`store ceiling: ${s.error}`);
      await store.stop();
      // Ferry.
      const dir = tempDir('ingest');
      try {
        const configPath = writeConfig(dir, [{ id: 'hooks', url: 'http://127.0.0.1:9/never-called' }]);
        const ferry = await startFerry({ configPath, dataDir: join(dir, 'data'), deliver: false });
        const cpu0 = ferry.cpuMs();
        const f = await client.ask({
          cmd: 'autocannon',
          url: ferry.url,
          connections: opts.connections,
          durationS: opts.seconds,
          maxRequests: 1_000_000,
          prefix: `ferry${r}`,
        });
        const cpuMs = ferry.cpuMs() - cpu0;
        await ferry.stop();
        const { events: committed, jobs } = await committedCounts(join(dir, 'data'));
        const acked = (f.ok2xx - f.rejectedBodies) * 100;
        runs.push({
          bare: { eventsPerSec: (b.ok2xx * 100) / b.durationS, latencyMs: b.latencyMs, non2xx: b.non2xx, errors: b.errors },
          store: { eventsPerSec: (s.events / s.ms) * 1000, events: s.events },
          ferry: {
            eventsPerSec: acked / f.durationS,
            latencyMs: f.latencyMs,
            non2xx: f.non2xx,
            errors: f.errors,
            timeouts: f.timeouts,
            ackedEvents: acked,
            committedEvents: committed,
            jobs,
            everyAckCommitted: committed >= acked,
            serverCpuUsPerEvent: round((cpuMs * 1000) / Math.max(1, acked), 1),
          },
        });
      } finally {
        await removeDir(dir);
      }
    } finally {
      await client.stop();
    }
  }
  const med = (f: (x: any) => number) => median(runs.map(f));
  const ferry = med((x) => x.ferry.eventsPerSec);
  const bare = med((x) => x.bare.eventsPerSec);
  const store = med((x) => x.store.eventsPerSec);
  const lower = Math.min(bare, store);
  const summary: IngestSummary = {
    ferryEventsPerSec: round(ferry),
    bareEventsPerSec: round(bare),
    storeEventsPerSec: round(store),
    ratioToLowerCeiling: round(ferry / lower, 2),
    p50Ms: med((x) => x.ferry.latencyMs.p50),
    p99Ms: med((x) => x.ferry.latencyMs.p99),
    goalMet: ferry >= 0.5 * lower && runs.every((x) => x.ferry.everyAckCommitted && x.ferry.non2xx === 0),
  };
  printTable(
    `Ingestion (${storeKind}): durable accepted events/s via /v1/batch (100 events/request, ${opts.connections} connections, ${opts.seconds} s, median of ${opts.runs} runs)`,
    ['system', 'events/s', 'x lower ceiling', 'p50 ms', 'p99 ms', 'notes'],
    [
      [
        'bare node:http (parse only)',
        summary.bareEventsPerSec,
        round(bare / lower, 2),
        med((x) => x.bare.latencyMs.p50),
        med((x) => x.bare.latencyMs.p99),
        'ceiling',
      ],
      [
        usePostgres ? `store alone (PostgreSQL, tx of 100, ${pgCeilingConnections} connections)` : 'store alone (SQLite FULL, tx of 100)',
        summary.storeEventsPerSec,
        round(store / lower, 2),
        '-',
        '-',
        'ceiling',
      ],
      [
        'Ferry /v1/batch',
        summary.ferryEventsPerSec,
        summary.ratioToLowerCeiling,
        summary.p50Ms,
        summary.p99Ms,
        `goal >= 0.5: ${summary.goalMet ? 'met' : 'NOT met'}; every 200 committed: ${runs.every((x) => x.ferry.everyAckCommitted)}; server CPU ${med((x) => x.ferry.serverCpuUsPerEvent)} µs/event`,
      ],
    ],
  );
  const path = writeResults('ingest', { settings: { ...opts, ...(usePostgres ? { storeCeilingConnections: pgCeilingConnections } : {}) }, summary, runs });
  log(`wrote ${path}`);
  return summary;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(() => runIngest({ runs: numFlag('runs', 3), seconds: numFlag('seconds', 8), connections: numFlag('connections', 64) }));
}
