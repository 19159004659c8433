/**
 * Benchmark 4, end to end (TypeScript via tsx; the server under test is the built
 * `packages/server/dist` run through the `ferry serve` CLI: run `npm run build` first).
 *
 * Open-loop load (one batch of 100 events every 100/rate seconds, from its own process) on
 * `ferry serve`, which delivers every event to a local receiver (its own process). For each
 * event: latency = the receiver's arrival - the moment the client got the ingestion 200
 * (clocks: performance.timeOrigin + now() in each process, the same host clock). Negative
 * values are possible (the receiver may see the event before the client reads its 200) and
 * are kept. The rate defaults to half the sustainable rate, 0.5 / (1/ingestion + 1/delivery)
 * from `bench/results/{ingest,delivery}.json` (or bench/results/postgres/… with --store postgres) when present (see halfSustainableRate), else
 * `--rate`. Median of `--runs`
 * runs of `--seconds` each (default 3 x 15 s).
 *
 * The server starts cold for each run, and its first second or two (JIT compilation, the
 * first connections to the receiver) put a tail of a few hundred ms on the events of that
 * moment alone. The headline p50/p99 is therefore the steady state: events acknowledged
 * after the first `--warmup-s` seconds (default 2); the p99 of every event is reported
 * beside it.
 *
 *   npx tsx bench/server/end-to-end.ts [--rate 2000] [--seconds 15] [--runs 3] [--warmup-s 2]
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitForArrivals } from './lib/backlog.js';
import {
  ensureStore,
  flag,
  log,
  main,
  median,
  numFlag,
  percentile,
  printTable,
  removeDir,
  resultsDir,
  round,
  startChild,
  startFerry,
  storeKind,
  tempDir,
  writeConfig,
  writeResults,
} from './lib/common.js';

export interface EndToEndSummary {
  rate: number;
  /** Steady state: events acknowledged after the warm-up. */
  p50Ms: number;
  p99Ms: number;
  /** Every event of the run, the warm-up included (a cold process: JIT, first connections). */
  allP99Ms: number;
  warmupS: number;
  ingestP50Ms: number;
  ingestP99Ms: number;
  delivered: boolean;
}

/**
 * Half of the sustainable rate from earlier results, or undefined. The server ingests and
 * delivers on one event loop, so the rate it sustains doing both is not min(ingestion,
 * delivery) but 1 / (1/ingestion + 1/delivery) (each event costs both); half of that.
 */
export function halfSustainableRate(): number | undefined {
  const read = (n: string) => (existsSync(join(resultsDir, `${n}.json`)) ? JSON.parse(readFileSync(join(resultsDir, `${n}.json`), 'utf8')) : undefined);
  const i = read('ingest')?.summary?.ferryEventsPerSec;
  const d = read('delivery')?.summary?.ferryPerSec;
  if (!i || !d) return undefined;
  return Math.max(100, Math.floor(1 / (1 / i + 1 / d) / 2 / 100) * 100);
}

export async function runEndToEnd(opts: { rate: number; seconds: number; runs: number; warmupS: number }): Promise<EndToEndSummary> {
  await ensureStore();
  const runs: any[] = [];
  for (let r = 1; r <= opts.runs; r++) {
    log(`end-to-end run ${r}/${opts.runs} at ${opts.rate} events/s for ${opts.seconds} s`);
    const dir = tempDir('e2e');
    const receiver = startChild('receiver.ts');
    const client = startChild('client.ts');
    try {
      const { port } = await receiver.ask({ cmd: 'listen', mode: 'ok' });
      await receiver.ask({ cmd: 'record', on: true });
      const configPath = writeConfig(dir, [{ id: 'hooks', url: `http://127.0.0.1:${port}/hooks` }]);
      const ferry = await startFerry({ configPath, dataDir: join(dir, 'data') });
      const prefix = `e2e${r}x${Date.now()}`;
      const load = await client.ask({ cmd: 'paced', url: ferry.url, eventsPerSec: opts.rate, durationS: opts.seconds, prefix });
      const acked = load.acks.length * 100;
      const stats = await waitForArrivals(receiver, acked, 60_000);
      await ferry.stop();
      const { arrivals } = (await receiver.ask({ cmd: 'arrivals' })) as { arrivals: [string, number][] };
      const ackAt = new Map<number, number>(load.acks.map((a: [number, number, number]) => [a[0], a[2]]));
      const latencies: number[] = [];
      const all: number[] = [];
      const steadyFrom = (load.acks[0]?.[2] ?? 0) + opts.warmupS * 1000;
      const seen = new Set<string>();
      for (const [id, at] of arrivals) {
        if (seen.has(id)) continue; // at least once: count the first arrival
        seen.add(id);
        const n = Number(id.slice(prefix.length + 1, id.lastIndexOf('-')));
        const ack = ackAt.get(n);
        if (ack === undefined) continue;
        all.push(at - ack);
        if (ack >= steadyFrom) latencies.push(at - ack);
      }
      latencies.sort((a, b) => a - b);
      all.sort((a, b) => a - b);
      const ingest = load.acks.map((a: [number, number, number]) => a[2] - a[1]).sort((a: number, b: number) => a - b);
      runs.push({
        offered: load.sentBatches * 100,
        acked,
        failedBatches: load.failed,
        arrived: stats.count,
        matched: all.length,
        steady: latencies.length,
        e2eMs: { p50: round(percentile(latencies, 50), 1), p99: round(percentile(latencies, 99), 1), max: round(latencies.at(-1) ?? NaN, 1) },
        allMs: { p50: round(percentile(all, 50), 1), p99: round(percentile(all, 99), 1), max: round(all.at(-1) ?? NaN, 1) },
        ingestMs: { p50: round(percentile(ingest, 50), 1), p99: round(percentile(ingest, 99), 1) },
      });
    } finally {
      await client.stop();
      await receiver.stop();
      await removeDir(dir);
    }
  }
  const med = (f: (x: any) => number) => round(median(runs.map(f)), 1);
  const summary: EndToEndSummary = {
    rate: opts.rate,
    p50Ms: med((x) => x.e2eMs.p50),
    p99Ms: med((x) => x.e2eMs.p99),
    allP99Ms: med((x) => x.allMs.p99),
    warmupS: opts.warmupS,
    ingestP50Ms: med((x) => x.ingestMs.p50),
    ingestP99Ms: med((x) => x.ingestMs.p99),
    delivered: runs.every((x) => x.matched >= x.acked && x.failedBatches === 0),
  };
  printTable(
    `End to end (${storeKind}): ingestion 200 -> receiver arrival at ${opts.rate.toLocaleString('en-US')} events/s (open loop, ${opts.seconds} s, median of ${opts.runs} runs)`,
    ['measure', 'p50 ms', 'p99 ms', 'notes'],
    [
      ['ingestion request -> 200', summary.ingestP50Ms, summary.ingestP99Ms, `${med((x) => x.acked)} events acknowledged per run`],
      [
        '200 -> receiver arrival',
        summary.p50Ms,
        summary.p99Ms,
        `after the first ${opts.warmupS} s; every acknowledged event delivered: ${summary.delivered}; max ${med((x) => x.e2eMs.max)} ms`,
      ],
      ['  the same, every event', med((x) => x.allMs.p50), summary.allP99Ms, `warm-up included; max ${med((x) => x.allMs.max)} ms`],
    ],
  );
  const path = writeResults('end-to-end', { settings: opts, summary, runs });
  log(`wrote ${path}`);
  return summary;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rate = flag('rate') !== undefined ? numFlag('rate', 2000) : (halfSustainableRate() ?? 2000);
  await main(() => runEndToEnd({ rate, seconds: numFlag('seconds', 15), runs: numFlag('runs', 3), warmupS: numFlag('warmup-s', 2) }));
}
