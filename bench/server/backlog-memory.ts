/**
 * Benchmark 6, backlog memory (TypeScript via tsx; the server under test is the built
 * `packages/server/dist` run through the `ferry serve` CLI: run `npm run build` first).
 *
 * The receiver is down (its port closed: every attempt is refused and retried) while
 * `--events` events are accepted through /v1/batch (default 200,000; `--full` for the
 * issue's 1,000,000). The server's RSS is sampled every second from /proc. Then the
 * receiver comes back on the same port and the backlog must drain. One run (it is long).
 *
 * Goal: RSS flat while the backlog grows: the peak over the second half of acceptance is at
 * most 1.25 x the RSS at 25 % accepted (and the fitted slope is reported, MB per 100k
 * events); and every event is delivered after recovery. The retry schedule is shortened
 * for the run (initialDelayMs 1000, maxDelayMs 5000) so that the drain waits seconds, not
 * the default 5-minute backoff cap; nothing else differs from the defaults.
 *
 *   npx tsx bench/server/backlog-memory.ts [--events 200000 | --full] [--drain-timeout-s 900]
 */
import { join } from 'node:path';
import { deliveryCounts, waitForArrivals } from './lib/backlog.js';
import {
  boolFlag,
  ensureStore,
  log,
  main,
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

export interface BacklogSummary {
  events: number;
  rssAt25PctMB: number;
  peakSecondHalfMB: number;
  slopeMBPer100k: number;
  flat: boolean;
  drained: boolean;
  drainS: number;
  goalMet: boolean;
}

const MB = 1024 * 1024;

export async function runBacklogMemory(opts: { events: number; drainTimeoutS: number }): Promise<BacklogSummary> {
  await ensureStore();
  const dir = tempDir('backlog');
  const receiver = startChild('receiver.ts');
  const client = startChild('client.ts');
  const samples: { t: number; phase: 'accept' | 'drain'; accepted: number; rssMB: number }[] = [];
  try {
    // Learn a free port, then close it: the receiver is down.
    const { port } = await receiver.ask({ cmd: 'listen', mode: 'ok' });
    await receiver.ask({ cmd: 'close' });
    const configPath = writeConfig(dir, [{ id: 'hooks', url: `http://127.0.0.1:${port}/hooks` }], {
      retry: { initialDelayMs: 1000, maxDelayMs: 5000 },
    });
    const dataDir = join(dir, 'data');
    const ferry = await startFerry({ configPath, dataDir });
    const t0 = Date.now();
    let accepted = 0;
    let phase: 'accept' | 'drain' = 'accept';
    const onProgress = (m: any) => {
      if (m.type === 'progress') accepted = m.acked;
    };
    client.proc.on('message', onProgress);
    const sampler = setInterval(() => samples.push({ t: (Date.now() - t0) / 1000, phase, accepted, rssMB: round(ferry.rss() / MB, 1) }), 1000);
    try {
      log(`accepting ${opts.events.toLocaleString('en-US')} events with the receiver down`);
      const fill = await client.ask({
        cmd: 'fill',
        url: ferry.url,
        events: opts.events,
        concurrency: 16,
        prefix: `mem${Date.now()}`,
        progressEvery: 50,
        timeoutMs: 3_600_000,
      });
      accepted = fill.acked;
      const acceptS = (Date.now() - t0) / 1000;
      log(`accepted ${fill.acked.toLocaleString('en-US')} in ${acceptS.toFixed(0)} s; receiver back up`);
      phase = 'drain';
      await receiver.ask({ cmd: 'listen', mode: 'ok', port });
      const drainStart = Date.now();
      const stats = await waitForArrivals(receiver, opts.events, opts.drainTimeoutS * 1000);
      const drainS = (Date.now() - drainStart) / 1000;
      clearInterval(sampler);
      await ferry.stop();
      const counts = await deliveryCounts(dataDir);
      const acc = samples.filter((s) => s.phase === 'accept');
      const at = (share: number) => acc.find((s) => s.accepted >= share * opts.events)?.rssMB ?? NaN;
      const secondHalf = acc.filter((s) => s.accepted >= 0.5 * opts.events);
      const peakSecondHalf = Math.max(...secondHalf.map((s) => s.rssMB));
      const fit = acc.filter((s) => s.accepted >= 0.25 * opts.events);
      const slope =
        linearSlope(
          fit.map((s) => s.accepted),
          fit.map((s) => s.rssMB),
        ) * 100_000;
      const flat = peakSecondHalf <= 1.25 * at(0.25);
      const drained = stats.count >= opts.events && (counts.byDestination['hooks']?.['succeeded'] ?? 0) === opts.events;
      const summary: BacklogSummary = {
        events: opts.events,
        rssAt25PctMB: at(0.25),
        peakSecondHalfMB: peakSecondHalf,
        slopeMBPer100k: round(slope, 2),
        flat,
        drained,
        drainS: round(drainS, 1),
        goalMet: flat && drained,
      };
      const peakDrain = Math.max(...samples.filter((s) => s.phase === 'drain').map((s) => s.rssMB));
      printTable(
        `Backlog memory (${storeKind}): server RSS while ${opts.events.toLocaleString('en-US')} events are accepted with the receiver down, then drained (1 run)`,
        ['point', 'RSS MB', 'notes'],
        [
          ['10 % accepted', at(0.1), ''],
          ['25 % accepted', at(0.25), 'baseline'],
          ['50 % accepted', at(0.5), ''],
          ['75 % accepted', at(0.75), ''],
          ['100 % accepted', acc.at(-1)?.rssMB ?? NaN, `accepted in ${round(acceptS, 1)} s (${round(fill.acked / acceptS)} events/s while the worker retried)`],
          [
            'peak, second half of acceptance',
            peakSecondHalf,
            `x baseline ${round(peakSecondHalf / at(0.25), 2)}; slope ${summary.slopeMBPer100k} MB per 100k events; flat (<= 1.25 x): ${flat}`,
          ],
          ['peak while draining', peakDrain, `drained in ${summary.drainS} s: ${drained}; attempts logged ${counts.attempts['hooks'] ?? 0}`],
        ],
      );
      const path = writeResults('backlog-memory', { settings: opts, summary, counts, samples });
      log(`wrote ${path}`);
      return summary;
    } finally {
      clearInterval(sampler);
      client.proc.off('message', onProgress);
      await ferry.stop();
    }
  } finally {
    await client.stop();
    await receiver.stop();
    await removeDir(dir);
  }
}

/** Least-squares slope of y over x. */
function linearSlope(x: number[], y: number[]): number {
  const n = x.length;
  if (n < 2) return NaN;
  const mx = x.reduce((a, b) => a + b, 0) / n;
  const my = y.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (x[i]! - mx) * (y[i]! - my);
    den += (x[i]! - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(() => runBacklogMemory({ events: boolFlag('full') ? 1_000_000 : numFlag('events', 200_000), drainTimeoutS: numFlag('drain-timeout-s', 900) }));
}
