/**
 * Benchmark 5, isolation (TypeScript via tsx; the server under test is the built
 * `packages/server/dist` run through the `ferry serve` CLI: run `npm run build` first).
 *
 * Delivery rate of a healthy destination from a backlog of `--events` events (default
 * 50,000), alone, and beside a second destination of the same source whose endpoint accepts
 * connections and never answers (its own process), so every one of its attempts holds a
 * slot for the full 5 s timeout and is then retried. Both backlogs are filled through Ferry's
 * ingestion API with delivery off, then copied for each run; runs alternate alone / with the
 * stuck one. Goal: the healthy rate with the stuck destination >= 0.9 x alone. Median of
 * `--runs` (default 3) of each.
 *
 *   npx tsx bench/server/isolation.ts [--events 50000] [--runs 3]
 */
import { join } from 'node:path';
import { arrivalRate, copyData, deliveryCounts, fillBacklog, waitForArrivals } from './lib/backlog.js';
import {
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
  writeConfig,
  writeResults,
} from './lib/common.js';

export interface IsolationSummary {
  alonePerSec: number;
  withStuckPerSec: number;
  ratio: number;
  goalMet: boolean;
}

export async function runIsolation(opts: { events: number; runs: number; timeoutS: number }): Promise<IsolationSummary> {
  await ensureStore();
  const dir = tempDir('isolation');
  const runs: any[] = [];
  const placeholder = 'http://127.0.0.1:9/placeholder';
  try {
    const aloneData = await fillBacklog(join(dir, 'alone'), [{ id: 'healthy', url: placeholder }], opts.events);
    const bothData = await fillBacklog(
      join(dir, 'both'),
      [
        { id: 'healthy', url: placeholder },
        { id: 'stuck', url: placeholder },
      ],
      opts.events,
    );
    for (let r = 1; r <= opts.runs; r++) {
      const run: any = {};
      for (const variant of ['alone', 'withStuck'] as const) {
        log(`isolation run ${r}/${opts.runs}: ${variant}`);
        const receiver = startChild('receiver.ts');
        const stuck = startChild('receiver.ts');
        const runDir = join(dir, `run${r}-${variant}`);
        try {
          const { port } = await receiver.ask({ cmd: 'listen', mode: 'ok' });
          const { port: stuckPort } = await stuck.ask({ cmd: 'listen', mode: 'hang' });
          const healthy = { id: 'healthy', url: `http://127.0.0.1:${port}/hooks` };
          const dests = variant === 'alone' ? [healthy] : [healthy, { id: 'stuck', url: `http://127.0.0.1:${stuckPort}/hooks` }];
          const dataDir = await copyData(variant === 'alone' ? aloneData : bothData, join(runDir, 'data'));
          const ferry = await startFerry({ configPath: writeConfig(runDir, dests), dataDir });
          const stats = await waitForArrivals(receiver, opts.events, opts.timeoutS * 1000);
          await ferry.stop();
          const counts = await deliveryCounts(dataDir);
          run[variant] = {
            perSec: arrivalRate(stats),
            arrived: stats.count,
            healthySucceeded: counts.byDestination['healthy']?.['succeeded'] ?? 0,
            stuckAttempts: counts.attempts['stuck'] ?? 0,
          };
        } finally {
          await receiver.stop();
          await stuck.stop();
          await removeDir(runDir);
        }
      }
      runs.push(run);
    }
  } finally {
    await removeDir(dir);
  }
  const alone = median(runs.map((x) => x.alone.perSec));
  const withStuck = median(runs.map((x) => x.withStuck.perSec));
  const complete = runs.every((x) => x.alone.healthySucceeded === opts.events && x.withStuck.healthySucceeded === opts.events);
  const summary: IsolationSummary = {
    alonePerSec: round(alone),
    withStuckPerSec: round(withStuck),
    ratio: round(withStuck / alone, 2),
    goalMet: withStuck >= 0.9 * alone && complete,
  };
  printTable(
    `Isolation (${storeKind}): healthy destination's deliveries/s, backlog of ${opts.events.toLocaleString('en-US')} events (median of ${opts.runs} runs each)`,
    ['healthy destination', 'deliveries/s', 'x alone', 'notes'],
    [
      ['alone', summary.alonePerSec, 1, 'reference'],
      [
        'beside a never-answering destination',
        summary.withStuckPerSec,
        summary.ratio,
        `goal >= 0.9: ${summary.goalMet ? 'met' : 'NOT met'}; stuck attempts logged: ${median(runs.map((x) => x.withStuck.stuckAttempts))}`,
      ],
    ],
  );
  const path = writeResults('isolation', { settings: opts, summary, runs });
  log(`wrote ${path}`);
  return summary;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(() => runIsolation({ events: numFlag('events', 50_000), runs: numFlag('runs', 3), timeoutS: numFlag('timeout-s', 180) }));
}
