/**
 * Nodes: one `ferry serve` node against two on the same PostgreSQL schema (TypeScript via tsx;
 * the server under test is the built `packages/server/dist`: run `npm run build` first).
 * PostgreSQL only: several nodes share one database, never one SQLite file.
 *
 * (a) Delivery: a backlog of `--events` events (default 40,000) is accepted with the worker
 *     off; each run delivers a fresh copy of it to a local receiver (its own process) with one
 *     node, then another fresh copy with two nodes started together (each with its own data dir,
 *     so its own node id, on the same schema). The rate is taken between the receiver's first
 *     and last arrival. After each run: every job succeeded, one attempt each, and the receiver
 *     saw each exactly once (no more arrivals than events after the nodes stopped).
 * (b) Ingestion: closed-loop load from autocannon (`--connections` in all, default 64, batches
 *     of 100 events) for `--seconds` into one node, then into two nodes at once (two clients,
 *     half the connections each), delivery off; accepted events/s in total, and every 200
 *     committed.
 *
 * 1-node and 2-node runs alternate `--runs` times (default 3); medians and the median of each
 * run's 2-node/1-node ratio are reported, with each node's CPU and the PostgreSQL server's
 * (its processes' CPU from /proc, where it runs on this machine). On a machine of few cores
 * shared by the nodes, the database and the load, two nodes compete for the same cores: the
 * ratio says what one database gives a second node here, not what a second machine would.
 *
 *   npx tsx bench/server/nodes.ts --store postgres [--events 40000] [--runs 3] [--seconds 8] [--connections 64] [--timeout-s 180]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { committedCounts, copyData, deliveryCounts, fillBacklog, waitForArrivals, arrivalRate } from './lib/backlog.js';
import {
  type FerryServer,
  cpuMsOf,
  ensureStore,
  log,
  machineBusyMs,
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
} from './lib/common.js';

export interface NodesSummary {
  /** Median deliveries/s with one node and with two, and the median of each run's ratio. */
  delivery1PerSec: number;
  delivery2PerSec: number;
  deliveryRatio: number;
  /** Median accepted events/s with one node and with two (in total), and the median ratio. */
  ingest1EventsPerSec: number;
  ingest2EventsPerSec: number;
  ingestRatio: number;
  /** Every delivery run: each job succeeded once and arrived once; every ingestion run: every 200 committed. */
  checked: boolean;
}

/** CPU so far of each process on this machine named `postgres` (server and backends), in ms, by pid. */
function postgresCpu(): Map<number, number> {
  const out = new Map<number, number>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return out;
  }
  for (const p of pids) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue;
      out.set(Number(p), cpuMsOf(Number(p)));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return out;
}

/**
 * PostgreSQL's CPU between two snapshots, in ms: each process's growth, a backend started
 * since counted from zero. A backend that ended in between is missed (Ferry's pool keeps its
 * connections), so this errs low; undefined where no postgres process is visible here.
 */
function postgresCpuSince(before: Map<number, number>): number | undefined {
  const after = postgresCpu();
  if (after.size === 0) return undefined;
  let ms = 0;
  for (const [pid, cpu] of after) ms += cpu - (before.get(pid) ?? 0);
  return ms;
}

interface DeliveryRun {
  nodes: number;
  perSec: number;
  arrived: number;
  /** Arrivals counted once every node had stopped: more than the events would be a duplicate. */
  arrivedAfterStop: number;
  succeeded: number;
  attempts: number;
  nodeCpuMs: number[];
  postgresCpuMs?: number;
  machineBusyMs: number;
  exactlyOnce: boolean;
}

async function deliverWith(nodes: number, filled: string, runDir: string, events: number, timeoutS: number): Promise<DeliveryRun> {
  const receiver = startChild('receiver.ts');
  const servers: FerryServer[] = [];
  try {
    const { port } = await receiver.ask({ cmd: 'listen', mode: 'ok' });
    const url = `http://127.0.0.1:${port}/hooks`;
    const dataDir = await copyData(filled, join(runDir, 'data'));
    const configPath = writeConfig(runDir, [{ id: 'hooks', url }]);
    const pg0 = postgresCpu();
    const busy0 = machineBusyMs();
    // Started together, so that neither has the backlog to itself for long; the others keep their own data dir (node id).
    servers.push(
      ...(await Promise.all(
        Array.from({ length: nodes }, (_, i) =>
          i === 0 ? startFerry({ configPath, dataDir }) : startFerry({ configPath, dataDir: join(runDir, `node${i + 1}`), schemaDir: dataDir }),
        ),
      )),
    );
    const stats = await waitForArrivals(receiver, events, timeoutS * 1000);
    const busyMs = machineBusyMs() - busy0;
    const postgresCpuMs = postgresCpuSince(pg0);
    const nodeCpuMs = servers.map((s) => s.cpuMs());
    await Promise.all(servers.splice(0).map((s) => s.stop()));
    // The nodes have stopped (in-flight requests finished): a moment for the receiver to count the last ones.
    await sleep(200);
    const after = await receiver.ask({ cmd: 'stats' });
    const counts = await deliveryCounts(dataDir);
    const succeeded = counts.byDestination['hooks']?.['succeeded'] ?? 0;
    const attempts = counts.attempts['hooks'] ?? 0;
    return {
      nodes,
      perSec: arrivalRate(stats),
      arrived: stats.count,
      arrivedAfterStop: after.count,
      succeeded,
      attempts,
      nodeCpuMs,
      ...(postgresCpuMs === undefined ? {} : { postgresCpuMs }),
      machineBusyMs: busyMs,
      exactlyOnce: after.count === events && succeeded === events && attempts === events,
    };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await receiver.stop();
    await removeDir(runDir);
  }
}

interface IngestRun {
  nodes: number;
  eventsPerSec: number;
  ackedEvents: number;
  committedEvents: number;
  non2xx: number;
  p99Ms: number[];
  nodeCpuMs: number[];
  postgresCpuMs?: number;
  everyAckCommitted: boolean;
}

async function ingestWith(nodes: number, runDir: string, r: number, opts: { seconds: number; connections: number }): Promise<IngestRun> {
  const servers: FerryServer[] = [];
  const clients = Array.from({ length: nodes }, () => startChild('client.ts'));
  try {
    const configPath = writeConfig(runDir, [{ id: 'hooks', url: 'http://127.0.0.1:9/never-called' }]);
    const dataDir = join(runDir, 'data');
    // The first node creates the schema (migrations); the second opens it after.
    servers.push(await startFerry({ configPath, dataDir, deliver: false }));
    for (let i = 1; i < nodes; i++) servers.push(await startFerry({ configPath, dataDir: join(runDir, `node${i + 1}`), schemaDir: dataDir, deliver: false }));
    const cpu0 = servers.map((s) => s.cpuMs());
    const pg0 = postgresCpu();
    const results = await Promise.all(
      clients.map((c, i) =>
        c.ask({
          cmd: 'autocannon',
          url: servers[i]!.url,
          connections: Math.max(1, Math.round(opts.connections / nodes)),
          durationS: opts.seconds,
          maxRequests: 1_000_000,
          prefix: `nodes${nodes}-${r}-${i}`,
        }),
      ),
    );
    const postgresCpuMs = postgresCpuSince(pg0);
    const nodeCpuMs = servers.map((s, i) => s.cpuMs() - cpu0[i]!);
    await Promise.all(servers.splice(0).map((s) => s.stop()));
    const { events: committed } = await committedCounts(dataDir);
    const acked = results.reduce((n, f) => n + (f.ok2xx - f.rejectedBodies) * 100, 0);
    const durationS = Math.max(...results.map((f) => f.durationS));
    return {
      nodes,
      eventsPerSec: acked / durationS,
      ackedEvents: acked,
      committedEvents: committed,
      non2xx: results.reduce((n, f) => n + f.non2xx, 0),
      p99Ms: results.map((f) => f.latencyMs.p99),
      nodeCpuMs,
      ...(postgresCpuMs === undefined ? {} : { postgresCpuMs }),
      everyAckCommitted: committed >= acked,
    };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await Promise.all(clients.map((c) => c.stop()));
    await removeDir(runDir);
  }
}

export async function runNodes(opts: {
  events: number;
  runs: number;
  seconds: number;
  connections: number;
  timeoutS: number;
}): Promise<NodesSummary | undefined> {
  if (!usePostgres) {
    log('nodes: needs PostgreSQL (several nodes share one database, never one SQLite file): run it with --store postgres; skipped');
    return undefined;
  }
  await ensureStore();
  const dir = tempDir('nodes');
  const delivery: DeliveryRun[][] = [];
  const ingest: IngestRun[][] = [];
  try {
    const filled = await fillBacklog(dir, [{ id: 'hooks', url: 'http://127.0.0.1:9/placeholder' }], opts.events);
    for (let r = 1; r <= opts.runs; r++) {
      const pair: DeliveryRun[] = [];
      for (const n of [1, 2]) {
        log(`nodes run ${r}/${opts.runs}: delivery with ${n} node${n > 1 ? 's' : ''}`);
        pair.push(await deliverWith(n, filled, join(dir, `d${r}-${n}`), opts.events, opts.timeoutS));
      }
      delivery.push(pair);
      const ipair: IngestRun[] = [];
      for (const n of [1, 2]) {
        log(`nodes run ${r}/${opts.runs}: ingestion into ${n} node${n > 1 ? 's' : ''}`);
        ipair.push(await ingestWith(n, join(dir, `i${r}-${n}`), r, opts));
      }
      ingest.push(ipair);
    }
  } finally {
    await removeDir(dir);
  }
  const med = <T>(xs: T[][], i: number, f: (x: T) => number) => median(xs.map((p) => f(p[i]!)));
  const ratio = <T>(xs: T[][], f: (x: T) => number) => median(xs.map((p) => f(p[1]!) / f(p[0]!)));
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const checked = delivery.every((p) => p.every((x) => x.exactlyOnce)) && ingest.every((p) => p.every((x) => x.everyAckCommitted && x.non2xx === 0));
  const summary: NodesSummary = {
    delivery1PerSec: round(med(delivery, 0, (x) => x.perSec)),
    delivery2PerSec: round(med(delivery, 1, (x) => x.perSec)),
    deliveryRatio: round(
      ratio(delivery, (x) => x.perSec),
      2,
    ),
    ingest1EventsPerSec: round(med(ingest, 0, (x) => x.eventsPerSec)),
    ingest2EventsPerSec: round(med(ingest, 1, (x) => x.eventsPerSec)),
    ingestRatio: round(
      ratio(ingest, (x) => x.eventsPerSec),
      2,
    ),
    checked,
  };
  // CPU per delivery / per event, in µs: each node's, and the database's where visible.
  const perUnit = (ms: number | undefined, units: number) => (ms === undefined ? '-' : round((ms * 1000) / Math.max(1, units), 1));
  const cpuNotes = (rows: { nodeCpuMs: number[]; postgresCpuMs?: number }[], units: (x: any) => number) => {
    const nodeUs = median(rows.map((x) => (sum(x.nodeCpuMs) * 1000) / Math.max(1, units(x))));
    const pgRows = rows.filter((x) => x.postgresCpuMs !== undefined);
    const pgUs = pgRows.length ? median(pgRows.map((x) => (x.postgresCpuMs! * 1000) / Math.max(1, units(x)))) : undefined;
    return `nodes' CPU ${round(nodeUs, 1)} µs, PostgreSQL's ${pgUs === undefined ? 'not visible' : `${round(pgUs, 1)} µs`}`;
  };
  const d = (i: number) => delivery.map((p) => p[i]!);
  const g = (i: number) => ingest.map((p) => p[i]!);
  printTable(
    `Nodes (${storeKind}): one node against two on one schema (medians of ${opts.runs} alternating runs; 2/1 is the median of each run's ratio)`,
    ['measure', '1 node', '2 nodes', '2/1', 'notes'],
    [
      [
        `delivery/s (backlog of ${opts.events.toLocaleString('en-US')})`,
        summary.delivery1PerSec,
        summary.delivery2PerSec,
        summary.deliveryRatio,
        `per delivery: 1 node ${cpuNotes(d(0), (x) => x.arrived)}; 2 nodes ${cpuNotes(d(1), (x) => x.arrived)}; each node's CPU (2 nodes) ${d(1)
          .map((x) => x.nodeCpuMs.map((ms) => perUnit(ms, x.arrived)).join('/'))
          .join(', ')} µs; each job once: ${delivery.every((p) => p.every((x) => x.exactlyOnce))}`,
      ],
      [
        `ingestion events/s (${opts.connections} connections in all, ${opts.seconds} s)`,
        summary.ingest1EventsPerSec,
        summary.ingest2EventsPerSec,
        summary.ingestRatio,
        `per event: 1 node ${cpuNotes(g(0), (x) => x.ackedEvents)}; 2 nodes ${cpuNotes(g(1), (x) => x.ackedEvents)}; every 200 committed: ${ingest.every((p) => p.every((x) => x.everyAckCommitted && x.non2xx === 0))}`,
      ],
    ],
  );
  const path = writeResults('nodes', { settings: opts, summary, delivery, ingest });
  log(`wrote ${path}`);
  return summary;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(() =>
    runNodes({
      events: numFlag('events', 40_000),
      runs: numFlag('runs', 3),
      seconds: numFlag('seconds', 8),
      connections: numFlag('connections', 64),
      timeoutS: numFlag('timeout-s', 180),
    }),
  );
}
