/**
 * Standard Webhooks signing: the delivery rate of one destination with
 * `standardWebhooks.secrets` (`--secrets`: 1, a destination's steady state, by default; 2 as
 * during a rotation, one HMAC-SHA256 each per request besides X-Signature's HMAC-SHA1) beside
 * the same destination without it (TypeScript via tsx;
 * the server under test is the built `packages/server/dist`: run `npm run build` first).
 *
 * A backlog of `--events` events (default 50,000) is accepted once with the worker off; each
 * run then starts `ferry serve` on a copy of it twice, signing off and on, in alternating
 * order from one run to the next, delivering to the same local receiver (its own process).
 * The rate is taken between the receiver's first and last arrival, as in the delivery
 * benchmark. Goal: on >= 0.95 x off. The ratio reported is the median of each run's own ratio
 * (a paired comparison, as the machine's speed drifts from minute to minute); the server's CPU
 * per delivery (start-up included) of each mode is reported beside it, being less sensitive
 * to what else the machine runs. After each run
 * the database is checked (every job succeeded) and the receiver's counts (every request
 * carried X-Signature, and with signing on, webhook-signature too).
 *
 *   npx tsx bench/server/signing.ts [--events 50000] [--runs 5] [--secrets 1] [--timeout-s 180]
 */
import { cpus } from 'node:os';
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

export interface SigningSummary {
  secrets: number;
  offPerSec: number;
  onPerSec: number;
  /** Server CPU per delivery, start-up included, medians. */
  offCpuUsPerDelivery: number;
  onCpuUsPerDelivery: number;
  /** Median over the runs of each run's on/off rate. */
  ratio: number;
  goalMet: boolean;
}

export async function runSigning(opts: { events: number; runs: number; secrets: number; timeoutS: number }): Promise<SigningSummary> {
  await ensureStore();
  const standardWebhooks = { secrets: Array.from({ length: opts.secrets }, (_, i) => 'whsec_' + Buffer.alloc(32, i + 1).toString('base64')) };
  const dir = tempDir('signing');
  const runs: { off: number; on: number; offCpuUs: number; onCpuUs: number; checked: boolean }[] = [];
  try {
    const filled = await fillBacklog(dir, [{ id: 'hooks', url: 'http://127.0.0.1:9/placeholder' }], opts.events);
    for (let r = 1; r <= opts.runs; r++) {
      const receiver = startChild('receiver.ts');
      const rates: Record<'off' | 'on', number> = { off: 0, on: 0 };
      const cpuUs: Record<'off' | 'on', number> = { off: 0, on: 0 };
      let checked = true;
      try {
        const { port } = await receiver.ask({ cmd: 'listen', mode: 'ok' });
        const url = `http://127.0.0.1:${port}/hooks`;
        // Alternate which goes first, so neither always meets the warmer (or busier) minute.
        const order: ('off' | 'on')[] = r % 2 === 1 ? ['off', 'on'] : ['on', 'off'];
        for (const mode of order) {
          log(`signing run ${r}/${opts.runs}: Standard Webhooks ${mode}`);
          const runDir = join(dir, `run${r}-${mode}`);
          try {
            await receiver.ask({ cmd: 'reset' });
            const dataDir = await copyData(filled, join(runDir, 'data'));
            const configPath = writeConfig(runDir, [{ id: 'hooks', url, ...(mode === 'on' ? { settings: { standardWebhooks } } : {}) }]);
            const ferry = await startFerry({ configPath, dataDir });
            const stats = await waitForArrivals(receiver, opts.events, opts.timeoutS * 1000);
            cpuUs[mode] = (ferry.cpuMs() * 1000) / Math.max(1, stats.count);
            await ferry.stop();
            const counts = await deliveryCounts(dataDir);
            rates[mode] = arrivalRate(stats);
            checked &&=
              stats.count >= opts.events &&
              (counts.byDestination['hooks']?.['succeeded'] ?? 0) === opts.events &&
              stats.signed === stats.count &&
              stats.standardSigned === (mode === 'on' ? stats.count : 0);
          } finally {
            await removeDir(runDir);
          }
        }
      } finally {
        await receiver.stop();
      }
      runs.push({ ...rates, offCpuUs: round(cpuUs.off), onCpuUs: round(cpuUs.on), checked });
    }
  } finally {
    await removeDir(dir);
  }
  const ratio = median(runs.map((x) => x.on / x.off));
  const summary: SigningSummary = {
    secrets: opts.secrets,
    offCpuUsPerDelivery: round(median(runs.map((x) => x.offCpuUs))),
    onCpuUsPerDelivery: round(median(runs.map((x) => x.onCpuUs))),
    offPerSec: round(median(runs.map((x) => x.off))),
    onPerSec: round(median(runs.map((x) => x.on))),
    ratio: round(ratio, 3),
    goalMet: ratio >= 0.95 && runs.every((x) => x.checked),
  };
  printTable(
    `Standard Webhooks signing (${storeKind}), ${opts.secrets} secret${opts.secrets > 1 ? 's' : ''}: deliveries/s from a backlog of ${opts.events.toLocaleString('en-US')} events (medians of ${opts.runs} paired runs)`,
    ['signing', 'deliveries/s', 'x off', 'notes'],
    [
      ['X-Signature only (off)', summary.offPerSec, 1, `reference; server CPU ${summary.offCpuUsPerDelivery} µs/delivery`],
      [
        `X-Signature and Standard Webhooks, ${opts.secrets} secret${opts.secrets > 1 ? 's' : ''} (on)`,
        summary.onPerSec,
        summary.ratio,
        `goal >= 0.95: ${summary.goalMet ? 'met' : 'NOT met'}; per-run ratios ${runs.map((x) => round(x.on / x.off, 3)).join(', ')}; all delivered and signed: ${runs.every((x) => x.checked)}; server CPU ${summary.onCpuUsPerDelivery} µs/delivery`,
      ],
    ],
  );
  // The machine, since this benchmark may be run alone, on another machine than the report's other rows.
  const path = writeResults('signing', { settings: opts, machine: `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'})`, summary, runs });
  log(`wrote ${path}`);
  return summary;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(() =>
    runSigning({ events: numFlag('events', 50_000), runs: numFlag('runs', 5), secrets: numFlag('secrets', 1), timeoutS: numFlag('timeout-s', 180) }),
  );
}
