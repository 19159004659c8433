/**
 * Retention under steady load (TypeScript via tsx; the server under test is the built
 * `packages/server/dist`, run `npm run build` first). An hour of steady traffic compressed
 * into minutes, with a retention of `--retention-s` seconds (default 60) for every kind:
 *
 *   1. Disk over time: open-loop load of `--rate` events/s (default 500) for `--seconds`
 *      (default 300) into a server that delivers to a local receiver, the pruner every
 *      `--prune-ms` (default 5000). The store's size (`ferry_store_size_bytes`; on SQLite also
 *      the database file with its WAL, recorded but not judged) is sampled every 5 s. Goal: flat after the first
 *      window, i.e. no later sample above 1.25 x the largest of the first window plus two
 *      prune intervals.
 *   2. Ingestion with pruning beside without: `--runs` (default 4) alternating pairs of
 *      closed-loop runs of `--rate-seconds` (default 15) each, no destination (so every event
 *      may go once old enough); "with" keeps events `--rate-seconds / 3` s and prunes every
 *      second, "without" keeps them forever. Goal: median of the pairs' ratios >= 0.9.
 *
 * Every load is bounded in count and time.
 *
 *   npx tsx bench/server/retention.ts [--seconds 300] [--rate 500] [--retention-s 60] [--prune-ms 5000] [--runs 4] [--rate-seconds 15] [--store postgres]
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import {
  adminToken,
  log,
  main,
  median,
  numFlag,
  printTable,
  removeDir,
  round,
  sleep,
  startChild,
  startFerry,
  storeKind,
  tempDir,
  usePostgres,
  writeConfig,
  writeResults,
  type FerryServer,
} from './lib/common.js';

export interface RetentionOptions {
  seconds: number;
  rate: number;
  retentionS: number;
  pruneMs: number;
  runs: number;
  rateSeconds: number;
}

export interface RetentionSummary {
  /** Largest size over the first window (retention plus two prune intervals), bytes. */
  firstWindowBytes: number;
  /** Largest size after it, bytes. */
  laterMaxBytes: number;
  /** Size at the end, bytes. */
  endBytes: number;
  /** laterMaxBytes / firstWindowBytes. */
  growth: number;
  ingestWithPerSec: number;
  ingestWithoutPerSec: number;
  /** Median of each pair's with/without ratio. */
  ingestRatio: number;
  goalMet: boolean;
  loadAverage: number;
  cores: number;
}

/** A configuration file with a retention of `seconds` for every kind (0: forever). */
function configWithRetention(dir: string, destinations: { id: string; url: string }[], seconds: number): string {
  const path = writeConfig(dir, destinations);
  const config = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  const days = seconds / 86_400;
  config['retention'] = { events: days, delivered: days, deadLetters: days, rejections: days, auditLog: days };
  writeFileSync(path, JSON.stringify(config, null, 2));
  return path;
}

async function storeSize(ferry: FerryServer): Promise<{ metricBytes: number; fileBytes: number }> {
  const res = await fetch(`${ferry.url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` }, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  const m = /^ferry_store_size_bytes (\S+)$/m.exec(text);
  let fileBytes = NaN;
  if (!usePostgres) {
    fileBytes = 0;
    for (const f of ['ferry.db', 'ferry.db-wal']) {
      const p = join(ferry.dataDir, f);
      if (existsSync(p)) fileBytes += statSync(p).size;
    }
  }
  return { metricBytes: m ? Number(m[1]) : NaN, fileBytes };
}

/** Phase 1: the size sampled every 5 s under steady load with a short retention. */
async function diskOverTime(opts: RetentionOptions): Promise<{ samples: { atS: number; metricBytes: number; fileBytes: number }[] }> {
  const dir = tempDir('retention-disk');
  const receiver = startChild('receiver.ts');
  const client = startChild('client.ts');
  try {
    const { port } = await receiver.ask({ cmd: 'listen', mode: 'ok' });
    const configPath = configWithRetention(dir, [{ id: 'hooks', url: `http://127.0.0.1:${port}/hook` }], opts.retentionS);
    const ferry = await startFerry({ configPath, dataDir: join(dir, 'data'), deliver: true, metrics: true, pruneIntervalMs: opts.pruneMs });
    try {
      const samples: { atS: number; metricBytes: number; fileBytes: number }[] = [];
      const started = Date.now();
      let loadDone = false;
      const load = client
        .ask({ cmd: 'paced', url: ferry.url, eventsPerSec: opts.rate, durationS: opts.seconds, prefix: 'ret' }, (opts.seconds + 120) * 1000)
        .finally(() => (loadDone = true));
      // Bounded: one sample per 5 s, at most the load's length plus a minute.
      for (let i = 0; i < Math.ceil(opts.seconds / 5) + 12 && !loadDone; i++) {
        await sleep(5000);
        const size = await storeSize(ferry);
        samples.push({ atS: round((Date.now() - started) / 1000, 1), ...size });
        log(`  ${samples.at(-1)!.atS} s: ${round(size.metricBytes / 1e6, 2)} MB (metric), ${round(size.fileBytes / 1e6, 2)} MB (files)`);
      }
      await load;
      return { samples };
    } finally {
      await ferry.stop();
    }
  } finally {
    await client.stop();
    await receiver.stop();
    await removeDir(dir);
  }
}

/** Phase 2: one closed-loop ingestion run, events kept `retentionS` seconds (0: forever). */
async function ingestRate(retentionS: number, seconds: number, r: number): Promise<number> {
  const dir = tempDir('retention-ingest');
  const client = startChild('client.ts');
  try {
    const configPath = configWithRetention(dir, [], retentionS);
    const ferry = await startFerry({ configPath, dataDir: join(dir, 'data'), deliver: false, metrics: true, pruneIntervalMs: 1000 });
    try {
      const f = await client.ask({
        cmd: 'autocannon',
        url: ferry.url,
        connections: 64,
        durationS: seconds,
        maxRequests: 1_000_000,
        prefix: `r${r}${retentionS}`,
      });
      if (f.non2xx > 0 || f.errors > 0) throw new Error(`ingestion with retention ${retentionS} s: ${f.non2xx} non-2xx, ${f.errors} errors`);
      return ((f.ok2xx - f.rejectedBodies) * 100) / f.durationS;
    } finally {
      await ferry.stop();
    }
  } finally {
    await client.stop();
    await removeDir(dir);
  }
}

export async function runRetention(opts: RetentionOptions): Promise<RetentionSummary> {
  log(`retention (${storeKind}): ${opts.seconds} s at ${opts.rate} events/s, retention ${opts.retentionS} s, pruning every ${opts.pruneMs} ms`);
  const disk = await diskOverTime(opts);
  // The store's own size: on SQLite the database's pages, checkpointed or still in the WAL.
  // The WAL file itself grows to its checkpoint size (about 40 MB) and stays there, whatever
  // the data: it is recorded in the samples (fileBytes), not judged.
  const size = (s: { metricBytes: number; fileBytes: number }) => s.metricBytes;
  const windowS = opts.retentionS + (2 * opts.pruneMs) / 1000;
  const first = disk.samples.filter((s) => s.atS <= windowS).map(size);
  const later = disk.samples.filter((s) => s.atS > windowS).map(size);
  const firstWindowBytes = first.length > 0 ? Math.max(...first) : NaN;
  const laterMaxBytes = later.length > 0 ? Math.max(...later) : NaN;

  const withRates: number[] = [];
  const withoutRates: number[] = [];
  const ratios: number[] = [];
  const keepS = Math.max(1, Math.round(opts.rateSeconds / 3));
  for (let r = 0; r < opts.runs; r++) {
    // Alternating, the order swapped every pair, so drift on a shared machine falls on both.
    const order = r % 2 === 0 ? [keepS, 0] : [0, keepS];
    const got: Record<number, number> = {};
    for (const retentionS of order) {
      got[retentionS] = await ingestRate(retentionS, opts.rateSeconds, r);
      log(`  pair ${r + 1}: retention ${retentionS === 0 ? 'forever' : `${retentionS} s`}: ${round(got[retentionS]!)} events/s`);
    }
    withRates.push(got[keepS]!);
    withoutRates.push(got[0]!);
    ratios.push(got[keepS]! / got[0]!);
  }
  const growth = laterMaxBytes / firstWindowBytes;
  const ingestRatio = round(median(ratios), 3);
  const summary: RetentionSummary = {
    firstWindowBytes,
    laterMaxBytes,
    endBytes: disk.samples.length > 0 ? size(disk.samples.at(-1)!) : NaN,
    growth: round(growth, 3),
    ingestWithPerSec: round(median(withRates)),
    ingestWithoutPerSec: round(median(withoutRates)),
    ingestRatio,
    goalMet: Number.isFinite(growth) && growth <= 1.25 && ingestRatio >= 0.9,
    loadAverage: round(loadavg()[1]!, 1),
    cores: cpus().length,
  };
  const mb = (b: number) => round(b / 1e6, 2);
  printTable(
    `Retention (${storeKind}): ${opts.seconds} s at ${opts.rate} events/s kept ${opts.retentionS} s; ingestion with pruning beside without (medians of ${opts.runs} alternating pairs)`,
    ['measure', 'value', 'goal'],
    [
      [`store size, largest in the first ${windowS} s, MB`, mb(firstWindowBytes), ''],
      ['store size, largest after it, MB', mb(laterMaxBytes), `<= 1.25 x the first window (${summary.growth} x)`],
      ['store size at the end, MB', mb(summary.endBytes), ''],
      ['ingestion with pruning, events/s', summary.ingestWithPerSec, ''],
      ['ingestion without, events/s', summary.ingestWithoutPerSec, ''],
      ['with / without', ingestRatio, '>= 0.9'],
    ],
  );
  writeResults('retention', { opts, samples: disk.samples, withRates, withoutRates, summary });
  return summary;
}

if (import.meta.url === `file://${process.argv[1]}`)
  await main(() =>
    runRetention({
      seconds: numFlag('seconds', 300),
      rate: numFlag('rate', 500),
      retentionS: numFlag('retention-s', 60),
      pruneMs: numFlag('prune-ms', 5000),
      runs: numFlag('runs', 4),
      rateSeconds: numFlag('rate-seconds', 15),
    }),
  );
