/**
 * The cost of metrics (TypeScript via tsx, the built `packages/server/dist`): ingestion and
 * delivery rates of a server with metrics on beside one with them off, in pairs whose two
 * servers run at the same time (each with its own client or receiver and its own copy of the
 * data), so that drift on a shared machine falls on both alike; the ratio is the median of the
 * pairs' own ratios. Sharing the cores halves each server's rate, and the one that needs more
 * CPU per call gets through fewer in the same time: the ratio is that of their costs. And the
 * time of a `GET /metrics` scrape with 1,000,000 pending deliveries in the store (written
 * straight into a store Ferry migrated, as a backlog that ingestion would have left, since
 * ingesting a million events through HTTP only to count them would take minutes). Every load
 * is bounded in count and time.
 *
 *   npx tsx bench/server/metrics.ts [--runs 4] [--seconds 5] [--events 30000] [--pending 1000000] [--store postgres]
 *   npx tsx bench/server/metrics.ts --scrape-only [--pending 1000000] [--store postgres]
 */
import Database from 'better-sqlite3';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { copyData, fillBacklog } from './lib/backlog.js';
import {
  adminToken,
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
  trackSchema,
  type FerryServer,
  usePostgres,
  withPg,
  writeConfig,
  writeResults,
} from './lib/common.js';

export interface MetricsSummary {
  ingestOnPerSec: number;
  ingestOffPerSec: number;
  /** Median of each pair's on/off ratio. */
  ingestRatio: number;
  deliveryOnPerSec: number;
  deliveryOffPerSec: number;
  deliveryRatio: number;
  /** The server's CPU per delivery, medians: steadier than a rate on a shared machine. */
  deliveryOnCpuUs: number;
  deliveryOffCpuUs: number;
  /** Median of each pair's off / on CPU per delivery: the rate the CPU allows, paired as the rates are. */
  deliveryCpuRatio: number;
  pending: number;
  scrapeMedianMs: number;
  scrapeMaxMs: number;
  /** The pairs' two servers ran at the same time (not one after the other). */
  simultaneous: true;
  /** Within 3 % both ways, and the scrape under 100 ms. */
  goalMet: boolean;
  /** The machine's 5-minute load average at the end, and its cores: a ratio measured on a machine busy beyond its cores is mostly noise. */
  loadAverage: number;
  cores: number;
}

/**
 * One ingestion pair: a server with metrics on and one with them off, each loaded by a client of
 * its own for `seconds`. Both servers are started first, then both loads at the same moment, so
 * that whatever else the machine does in that minute (a server's own start included) falls on
 * both. Events accepted per second, each.
 */
async function ingestPair(seconds: number, r: number): Promise<{ on: number; off: number }> {
  const dir = tempDir('metrics-ingest');
  // Which side's load is asked for first alternates from pair to pair.
  const sides = r % 2 === 1 ? [true, false] : [false, true];
  const clients = sides.map(() => startChild('client.ts'));
  const servers: FerryServer[] = [];
  try {
    const started = await Promise.all(
      sides.map((metrics) => {
        const side = join(dir, metrics ? 'on' : 'off');
        const configPath = writeConfig(side, [{ id: 'hooks', url: 'http://127.0.0.1:9/never-called' }]);
        return startFerry({ configPath, dataDir: join(side, 'data'), deliver: false, metrics }).then((f) => (servers.push(f), f));
      }),
    );
    const rates = await Promise.all(
      sides.map(async (metrics, i) => {
        const f = await clients[i]!.ask({
          cmd: 'autocannon',
          url: started[i]!.url,
          connections: 64,
          durationS: seconds,
          maxRequests: 1_000_000,
          prefix: `m${r}${metrics}`,
        });
        if (f.non2xx > 0 || f.errors > 0) throw new Error(`ingestion with metrics ${metrics ? 'on' : 'off'}: ${f.non2xx} non-2xx, ${f.errors} errors`);
        return ((f.ok2xx - f.rejectedBodies) * 100) / f.durationS;
      }),
    );
    return sides[0] ? { on: rates[0]!, off: rates[1]! } : { on: rates[1]!, off: rates[0]! };
  } finally {
    await Promise.all(servers.map((f) => f.stop()));
    await Promise.all(clients.map((c) => c.stop()));
    await removeDir(dir);
  }
}

/** A delivery run: its rate from the moment the server was told to deliver, and its CPU per delivery over that stretch. */
interface DeliveryRun {
  perSec: number;
  cpuUs: number;
  /** Deliveries counted (all of the backlog for the side that finished first, fewer for the other). */
  count: number;
}

/**
 * One delivery pair: a server with metrics on and one with them off, each with its own copy of
 * the backlog and its own receiver. Both start and listen with delivery held, then are told to
 * deliver at the same moment (which one is told first alternates from pair to pair), and deliver
 * on the same cores (and the same database) until the first of them has delivered everything;
 * both are read at that moment, so their rates and CPU per delivery cover the same stretch of
 * the machine's time. Run one after the other, a pair's two runs met different minutes of a
 * shared machine, whose drift (raw undici's CPU per request has ranged 34-66 µs over one day
 * here) is larger than the 3 % being measured.
 */
async function deliveryPair(filled: string, events: number, runDir: string, onToldFirst: boolean): Promise<{ on: DeliveryRun; off: DeliveryRun }> {
  const sides = onToldFirst ? [true, false] : [false, true];
  const receivers = sides.map(() => startChild('receiver.ts'));
  const servers: FerryServer[] = [];
  try {
    const setups = await Promise.all(
      sides.map(async (metrics, i) => {
        const { port } = await receivers[i]!.ask({ cmd: 'listen', mode: 'ok' });
        const side = join(runDir, metrics ? 'on' : 'off');
        const dataDir = await copyData(filled, join(side, 'data'));
        return { dataDir, configPath: writeConfig(side, [{ id: 'hooks', url: `http://127.0.0.1:${port}/hooks` }]) };
      }),
    );
    // Both start and listen with delivery held; then both are told to deliver at the same
    // moment, and each is measured from there, its start (about a second of CPU) left out.
    const started = await Promise.all(sides.map((metrics, i) => startFerry({ ...setups[i]!, metrics, deliver: 'signal' }).then((f) => (servers.push(f), f))));
    const at = performance.timeOrigin + performance.now();
    const starts = started.map((ferry) => ({ ferry, at, cpuMs: ferry.cpuMs() }));
    for (const ferry of started) ferry.proc.kill('SIGUSR2');
    const deadline = Date.now() + 180_000;
    for (;;) {
      const stats = await Promise.all(receivers.map((r) => r.ask({ cmd: 'stats' })));
      if (stats.some((s) => s.count >= events)) {
        const runs = stats.map((s, i): DeliveryRun => {
          const start = starts[i]!;
          return {
            perSec: s.count / ((s.lastAt - start.at) / 1000),
            cpuUs: ((start.ferry.cpuMs() - start.cpuMs) * 1000) / s.count,
            count: s.count,
          };
        });
        return sides[0] ? { on: runs[0]!, off: runs[1]! } : { on: runs[1]!, off: runs[0]! };
      }
      if (Date.now() > deadline) throw new Error(`delivery pair: ${stats.map((s) => s.count).join(' and ')} of ${events} arrived in 180 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await Promise.all(servers.map((f) => f.stop()));
    await Promise.all(receivers.map((r) => r.stop()));
    await removeDir(runDir);
  }
}

/** Writes `pending` pending deliveries (a tenth to a second destination, 1 in 50 dead letters besides) into a migrated, empty store. */
async function fillPending(dataDir: string, pending: number): Promise<void> {
  const body = `'{"type":"track","event":"Order Completed","userId":"u","properties":{"pad":"${'x'.repeat(200)}"}}'`;
  if (usePostgres) {
    const { PgStore } = await import('../../packages/server/dist/index.js');
    const { databaseUrl } = await import('./lib/common.js');
    const schema = trackSchema(dataDir);
    await (await PgStore.open({ connectionString: databaseUrl, schema, poolSize: 1 })).close();
    await withPg(async (c) => {
      await c.query(`INSERT INTO deliveries (id, destination_id, kind, body, created_at, next_attempt_at, dead_reason, status)
        SELECT i, CASE WHEN i % 10 = 0 THEN 'other' ELSE 'hooks' END, 'event', ${body}, 1700000000000 + i, 1700000000000 + i,
               CASE WHEN i % 50 = 0 THEN 'non_retryable_response' END, CASE WHEN i % 50 = 0 THEN 'dead' ELSE 'pending' END
        FROM generate_series(1, ${Math.ceil(pending / 0.98)}) i`);
      await c.query(
        `INSERT INTO delivery_queue (delivery_id, destination_id, next_attempt_at) SELECT id, destination_id, next_attempt_at FROM deliveries WHERE dead_reason IS NULL`,
      );
      await c.query(`SELECT setval(pg_get_serial_sequence('deliveries', 'id'), (SELECT MAX(id) FROM deliveries))`);
      await c.query('VACUUM ANALYZE deliveries');
      await c.query('VACUUM ANALYZE delivery_queue');
    }, schema);
    return;
  }
  const { SqliteStore } = await import('../../packages/server/dist/index.js');
  await new SqliteStore({ path: join(dataDir, 'ferry.db') }).close();
  const db = new Database(join(dataDir, 'ferry.db'));
  try {
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${Math.ceil(pending / 0.98)})
      INSERT INTO deliveries (destination_id, kind, body, status, created_at, next_attempt_at, dead_reason)
      SELECT CASE WHEN i % 10 = 0 THEN 'other' ELSE 'hooks' END, 'event', ${body}, CASE WHEN i % 50 = 0 THEN 'dead' ELSE 'pending' END,
             1700000000000 + i, 1700000000000 + i, CASE WHEN i % 50 = 0 THEN 'non_retryable_response' END FROM n`);
    db.exec('ANALYZE');
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}

async function scrapeTimes(pending: number, scrapes: number): Promise<{ pending: number; ms: number[] }> {
  const dir = tempDir('metrics-scrape');
  try {
    const dataDir = join(dir, 'data');
    const started = Date.now();
    await fillPending(dataDir, pending);
    log(`wrote ${pending.toLocaleString('en-US')} pending deliveries in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const configPath = writeConfig(dir, [
      { id: 'hooks', url: 'http://127.0.0.1:9/never-called' },
      { id: 'other', url: 'http://127.0.0.1:9/never-called' },
    ]);
    const ferry = await startFerry({ configPath, dataDir, deliver: false, metrics: true });
    try {
      const ms: number[] = [];
      let seen = 0;
      for (let i = 0; i < scrapes; i++) {
        const t0 = performance.now();
        const res = await fetch(`${ferry.url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` }, signal: AbortSignal.timeout(30_000) });
        const text = await res.text();
        ms.push(performance.now() - t0);
        if (res.status !== 200) throw new Error(`scrape answered ${res.status}`);
        seen = [...text.matchAll(/^ferry_deliveries_pending\{destination="[^"]+"\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
      }
      if (seen < pending) throw new Error(`the scrape showed ${seen} pending, not ${pending}`);
      return { pending: seen, ms };
    } finally {
      await ferry.stop();
    }
  } finally {
    await removeDir(dir);
  }
}

export async function runMetrics(opts: { runs: number; seconds: number; events: number; pending: number }): Promise<MetricsSummary> {
  await ensureStore();
  const ingest: { on: number; off: number }[] = [];
  for (let r = 1; r <= opts.runs; r++) {
    log(`metrics: ingestion pair ${r}/${opts.runs} (both at once)`);
    ingest.push(await ingestPair(opts.seconds, r));
  }
  const dir = tempDir('metrics-delivery');
  const delivery: { on: number; off: number; onCpuUs: number; offCpuUs: number; onCount: number; offCount: number }[] = [];
  try {
    const filled = await fillBacklog(dir, [{ id: 'hooks', url: 'http://127.0.0.1:9/placeholder' }], opts.events);
    for (let r = 1; r <= opts.runs; r++) {
      log(`metrics: delivery pair ${r}/${opts.runs} (both at once)`);
      // Which server is told to deliver first alternates, so that neither always has the head start.
      const { on, off } = await deliveryPair(filled, opts.events, join(dir, `run${r}`), r % 2 === 1);
      delivery.push({ on: on.perSec, off: off.perSec, onCpuUs: round(on.cpuUs, 1), offCpuUs: round(off.cpuUs, 1), onCount: on.count, offCount: off.count });
    }
  } finally {
    await removeDir(dir);
  }
  log(`metrics: scrapes with ${opts.pending.toLocaleString('en-US')} pending`);
  const scrape = await scrapeTimes(opts.pending, 7);
  const ingestRatio = median(ingest.map((p) => p.on / p.off));
  const deliveryRatio = median(delivery.map((p) => p.on / p.off));
  const summary: MetricsSummary = {
    ingestOnPerSec: round(median(ingest.map((p) => p.on))),
    ingestOffPerSec: round(median(ingest.map((p) => p.off))),
    ingestRatio: round(ingestRatio, 3),
    deliveryOnPerSec: round(median(delivery.map((p) => p.on))),
    deliveryOffPerSec: round(median(delivery.map((p) => p.off))),
    deliveryRatio: round(deliveryRatio, 3),
    deliveryOnCpuUs: round(median(delivery.map((p) => p.onCpuUs)), 1),
    deliveryOffCpuUs: round(median(delivery.map((p) => p.offCpuUs)), 1),
    deliveryCpuRatio: round(median(delivery.map((p) => p.offCpuUs / p.onCpuUs)), 3),
    pending: scrape.pending,
    // The first scrape reads a cold cache; the median is of the later ones.
    scrapeMedianMs: round(median(scrape.ms.slice(1)), 1),
    scrapeMaxMs: round(Math.max(...scrape.ms.slice(1)), 1),
    simultaneous: true,
    goalMet: ingestRatio >= 0.97 && deliveryRatio >= 0.97 && median(scrape.ms.slice(1)) < 100,
    loadAverage: round(loadavg()[1]!, 1),
    cores: cpus().length,
  };
  printTable(
    `Metrics (${storeKind}): rates with metrics on beside off (medians of ${opts.runs} pairs, each pair's two servers at the same time), and /metrics with ${scrape.pending.toLocaleString('en-US')} pending`,
    ['measure', 'metrics on', 'metrics off', 'on / off'],
    [
      ['ingestion, events/s', summary.ingestOnPerSec, summary.ingestOffPerSec, summary.ingestRatio],
      [`delivery of ${opts.events.toLocaleString('en-US')}, deliveries/s`, summary.deliveryOnPerSec, summary.deliveryOffPerSec, summary.deliveryRatio],
      ['server CPU per delivery, µs (ratio: off / on)', summary.deliveryOnCpuUs, summary.deliveryOffCpuUs, summary.deliveryCpuRatio],
      ['GET /metrics, ms (median, max of 6 warm)', `${summary.scrapeMedianMs}, ${summary.scrapeMaxMs}`, '', ''],
    ],
  );
  writeResults('metrics', { opts, ingest, delivery, scrapeMs: scrape.ms, summary });
  return summary;
}

/** The scrape alone: its time with `pending` pending deliveries, printed, not written to the results. */
async function runScrapeOnly(pending: number): Promise<void> {
  await ensureStore();
  const scrape = await scrapeTimes(pending, 7);
  printTable(
    `GET /metrics (${storeKind}) with ${scrape.pending.toLocaleString('en-US')} pending`,
    ['scrape', 'ms'],
    [
      ['first (cold)', round(scrape.ms[0]!, 1)],
      ['median of 6 warm', round(median(scrape.ms.slice(1)), 1)],
      ['max of 6 warm', round(Math.max(...scrape.ms.slice(1)), 1)],
    ],
  );
}

if (import.meta.url === `file://${process.argv[1]}` && process.argv.includes('--scrape-only')) await main(() => runScrapeOnly(numFlag('pending', 1_000_000)));
else if (import.meta.url === `file://${process.argv[1]}`)
  await main(() =>
    runMetrics({ runs: numFlag('runs', 4), seconds: numFlag('seconds', 5), events: numFlag('events', 30_000), pending: numFlag('pending', 1_000_000) }),
  );
