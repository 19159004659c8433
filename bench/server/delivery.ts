/**
 * Benchmark 3, delivery (TypeScript via tsx; the server under test is the built
 * `packages/server/dist` run through the `ferry serve` CLI: run `npm run build` first).
 *
 * A backlog of `--events` events (default 100,000) is accepted through Ferry's own API with
 * the worker off, then `ferry serve` starts against a copy of it and delivers every job to a
 * local receiver (its own process): signed (sharedSecret) and logged (one attempt-log entry
 * per URL: a row of `attempts`, or on PostgreSQL the first attempt kept in the delivery's own
 * row). The rate is taken between the receiver's first and last arrival. Reference: raw
 * undici (a Pool with the same number of connections as Ferry's per-destination
 * concurrency, default 16) posting the same stored bodies to the same receiver, unsigned and
 * unlogged. Goals: Ferry >= 0.5 x raw; and, per CPU, which shared cores cannot distort, the
 * server's CPU per delivery at most 2 x raw undici's own client CPU per request (both
 * reported, as medians of each run's ratio). After each run the database is checked: every job
 * succeeded, one attempt per job, every request signed.
 *
 * Each run measures the reference, then Ferry, then the reference again, back to back, and
 * takes the reference as the mean of its two measures; the ratio reported is the median of
 * the runs' own ratios (a paired comparison), since on a shared machine both rates drift
 * together from one minute to the next (raw undici has been seen anywhere from 18k to 33k
 * requests/s here, and its CPU per request from 34 to 66 µs). The medians of the two rates
 * are reported beside it. The server's CPU is counted from the moment it listens to the last
 * arrival, as the reference's is its posting loop alone: the start (about a second of CPU)
 * is reported apart, since spread over a run it would make a per-delivery figure depend on
 * the run's length.
 * Each run's JSON also holds both rates per stretch of 10,000 arrivals (`perSecBy10k`; raw
 * undici's under `raw.before` and `raw.after`): raw undici's client speeds up through a run as
 * it warms up, and the ratio mixes that in (each reference runs in a client process of its own).
 * So each is also measured from its 10,000th arrival to its last (`steadyPerSec`), both sides
 * warm, and the median of those ratios is reported beside the goal's (`steadyRatio`).
 *
 * With `--floor` (PostgreSQL), each run also measures the floor: Ferry's own claim, signing,
 * HTTP sender and completion with no worker around them (lib/floor.ts), on a copy of the
 * backlog, to the same receiver, its CPU over its loop per delivery beside raw undici's per
 * request. What the server spends beyond it goes with the worker (its scheduling, slots and
 * pacing, guards and circuit breakers, lease renewal, retry policy and events, and what a larger
 * program and a lower rate cost around them); what the floor spends
 * beyond raw undici is what signing, the guarded transport, claiming and recording cost.
 *
 *   npx tsx bench/server/delivery.ts [--events 100000] [--runs 5] [--timeout-s 180] [--floor]
 */
import { join } from 'node:path';
import { arrivalRate, bodySource, copyData, deliveryCounts, fillBacklog, steadyRate, stretchRates, waitForArrivals } from './lib/backlog.js';
import {
  ensureStore,
  log,
  machineBusyMs,
  main,
  median,
  numFlag,
  printTable,
  removeDir,
  round,
  sharedSecret,
  startChild,
  startFerry,
  storeKind,
  tempDir,
  writeConfig,
  writeResults,
} from './lib/common.js';

export interface DeliverySummary {
  /** The server's CPU from listening to the last arrival (its start apart), per delivery; medians over the runs. */
  serverCpuUsPerDelivery?: number;
  /** The part of it spent in the kernel (system time), per delivery. */
  serverSystemCpuUsPerDelivery?: number;
  /** CPU the server used to start, until it listened, in ms. */
  serverStartCpuMs?: number;
  /** Both cores, every process (server, receiver, database), per delivery; and the same for raw undici per request. */
  machineCpuUsPerDelivery?: number;
  rawMachineCpuUsPerRequest?: number;
  /** Raw undici's own client CPU per request, medians over the runs. */
  rawClientCpuUsPerRequest?: number;
  /** The part of it spent in the kernel (system time). */
  rawClientSystemCpuUsPerRequest?: number;
  /** Median of each run's server CPU per delivery over raw undici's client CPU per request (goal: at most 2). */
  cpuRatio?: number;
  /** At most 2, and every run complete: each job succeeded, logged and signed. */
  cpuGoalMet?: boolean;
  /** The same from the 10,000th arrival (or answer) on, both sides warmed up; absent for shorter runs. */
  steadyServerCpuUsPerDelivery?: number;
  steadyRawClientCpuUsPerRequest?: number;
  steadyCpuRatio?: number;
  ferryPerSec: number;
  rawPerSec: number;
  ratio: number;
  /** Median over the runs of Ferry's rate to raw undici's, each from its 10,000th arrival on; absent for shorter runs. */
  steadyRatio?: number;
  /**
   * With `--floor`: the CPU per delivery of Ferry's claim, signing, sender and completion with no
   * worker around them (lib/floor.ts), and its ratio to raw undici's client CPU per request
   * (median of each run's); the same from the 10,000th delivery on; whether every floor run
   * delivered, signed and recorded every job.
   */
  floorCpuUsPerDelivery?: number;
  floorCpuRatio?: number;
  steadyFloorCpuUsPerDelivery?: number;
  steadyFloorCpuRatio?: number;
  floorComplete?: boolean;
  goalMet: boolean;
}

/** Arrivals (and raw undici's answers) after which both sides count as warmed up, for the steady figures. */
const steadyFrom = 10_000;

/** Default per-destination concurrency of the server, so the reference uses as many connections. */
const connections = 16;

export async function runDelivery(opts: { events: number; runs: number; timeoutS: number; floor?: boolean }): Promise<DeliverySummary> {
  if (opts.floor && storeKind !== 'postgres') throw new Error('--floor measures the PostgreSQL store: add --store postgres');
  await ensureStore();
  const dir = tempDir('delivery');
  const runs: any[] = [];
  try {
    const filled = await fillBacklog(dir, [{ id: 'hooks', url: 'http://127.0.0.1:9/placeholder' }], opts.events);
    for (let r = 1; r <= opts.runs; r++) {
      log(`delivery run ${r}/${opts.runs}`);
      const receiver = startChild('receiver.ts');
      const client = startChild('client.ts');
      const runDir = join(dir, `run${r}`);
      try {
        const { port } = await receiver.ask({ cmd: 'listen', mode: 'ok' });
        const url = `http://127.0.0.1:${port}/hooks`;
        // The reference, raw undici (same bodies, same receiver), runs just before Ferry and
        // again just after, and counts as the mean of the two: a shared machine's speed drifts
        // over a run, and one measure on one side of Ferry's would carry that drift into the ratio.
        const measureRaw = async (client: ReturnType<typeof startChild>) => {
          const busy0 = machineBusyMs();
          const raw = await client.ask({ cmd: 'raw-post', url, ...bodySource(filled), count: opts.events, connections, timeoutMs: opts.timeoutS * 1000 });
          const busyMs = machineBusyMs() - busy0;
          const rawStats = await receiver.ask({ cmd: 'stats' });
          await receiver.ask({ cmd: 'reset' });
          // Machine CPU per request: the client, the receiver. It also holds the client's reading
          // of the stored bodies before it posts them (a few µs per request), so it errs on the high side.
          return {
            perSec: arrivalRate(rawStats),
            steadyPerSec: steadyRate(rawStats),
            perSecBy10k: stretchRates(rawStats),
            ok: raw.ok,
            failed: raw.failed,
            ms: raw.ms,
            machineCpuUsPerRequest: round((busyMs * 1000) / opts.events),
            clientCpuUsPerRequest: round((raw.cpuMs * 1000) / Math.max(1, raw.ok)),
            clientSystemCpuUsPerRequest: round((raw.systemCpuMs * 1000) / Math.max(1, raw.ok)),
            steadyClientCpuUsPerRequest: raw.steadyRequests > 0 ? round((raw.steadyCpuMs * 1000) / raw.steadyRequests) : undefined,
          };
        };
        const rawBefore = await measureRaw(client);
        // Ferry on a copy of the backlog.
        const dataDir = await copyData(filled, join(runDir, 'data'));
        const configPath = writeConfig(runDir, [{ id: 'hooks', url }]);
        const started = Date.now();
        const ferry = await startFerry({ configPath, dataDir });
        const ferryBusy0 = machineBusyMs();
        const startCpu = ferry.cpuSplitMs();
        // The worker starts a moment before the banner that startFerry waits for: what arrived by
        // now is not counted, as its CPU is not.
        const arrivedAtStart = (await receiver.ask({ cmd: 'stats' })).count as number;
        // The server's CPU when the receiver has counted 10,000 arrivals (or just after: it is
        // asked every 100 ms), for the steady figure beside the whole run's, as for raw undici.
        let mark: { cpuMs: number; count: number } | undefined;
        const stats = await waitForArrivals(receiver, opts.events, opts.timeoutS * 1000, (count) => {
          if (mark === undefined && count >= steadyFrom) {
            const cpu = ferry.cpuSplitMs();
            mark = { cpuMs: cpu.userMs + cpu.systemMs, count };
          }
        });
        const ferryBusyMs = machineBusyMs() - ferryBusy0;
        const wallS = (Date.now() - started) / 1000;
        const endCpu = ferry.cpuSplitMs();
        // From listening to the last arrival, as raw undici's figure is its posting loop alone:
        // the start (about a second of CPU: modules, migrations, catalogue) is not per delivery,
        // and spread over a run's events it would make the figure depend on the run's length.
        const cpuMs = endCpu.userMs + endCpu.systemMs - startCpu.userMs - startCpu.systemMs;
        const systemCpuMs = endCpu.systemMs - startCpu.systemMs;
        const startCpuMs = startCpu.userMs + startCpu.systemMs;
        await ferry.stop();
        const counts = await deliveryCounts(dataDir);
        await receiver.ask({ cmd: 'reset' });
        const floor = opts.floor ? await measureFloor(filled, join(runDir, 'floor'), receiver, url, opts) : undefined;
        // A client process of its own, as cold as the first: the mean is of drift, not of warm-up.
        const afterClient = startChild('client.ts');
        const rawAfter = await measureRaw(afterClient).finally(() => afterClient.stop());
        const mean = (f: (x: typeof rawBefore) => number | undefined): number | undefined => {
          const [a, b] = [f(rawBefore), f(rawAfter)];
          return a === undefined || b === undefined ? undefined : round((a + b) / 2);
        };
        runs.push({
          raw: {
            perSec: mean((x) => x.perSec)!,
            steadyPerSec: mean((x) => x.steadyPerSec),
            ok: rawBefore.ok + rawAfter.ok,
            failed: rawBefore.failed + rawAfter.failed,
            machineCpuUsPerRequest: mean((x) => x.machineCpuUsPerRequest)!,
            clientCpuUsPerRequest: mean((x) => x.clientCpuUsPerRequest)!,
            clientSystemCpuUsPerRequest: mean((x) => x.clientSystemCpuUsPerRequest)!,
            steadyClientCpuUsPerRequest: mean((x) => x.steadyClientCpuUsPerRequest),
            before: rawBefore,
            after: rawAfter,
          },
          // Machine CPU per delivery: the server, the receiver and, on PostgreSQL, the database.
          ferry: {
            perSec: arrivalRate(stats),
            steadyPerSec: steadyRate(stats),
            perSecBy10k: stretchRates(stats),
            arrived: stats.count,
            signed: stats.signed,
            wallS,
            // Noise-resistant where the wall-clock rate is not (a shared machine).
            serverCpuUsPerDelivery: round((cpuMs * 1000) / Math.max(1, stats.count - arrivedAtStart)),
            serverSystemCpuUsPerDelivery: round((systemCpuMs * 1000) / Math.max(1, stats.count - arrivedAtStart)),
            arrivedAtStart,
            serverStartCpuMs: startCpuMs,
            steadyServerCpuUsPerDelivery:
              mark !== undefined && stats.count > mark.count
                ? round(((endCpu.userMs + endCpu.systemMs - mark.cpuMs) * 1000) / (stats.count - mark.count))
                : undefined,
            machineCpuUsPerDelivery: round((ferryBusyMs * 1000) / Math.max(1, stats.count)),
            succeeded: counts.byDestination['hooks']?.['succeeded'] ?? 0,
            attempts: counts.attempts['hooks'] ?? 0,
            complete: stats.count >= opts.events,
          },
          ...(floor === undefined ? {} : { floor }),
        });
      } finally {
        await client.stop();
        await receiver.stop();
        await removeDir(runDir);
      }
    }
  } finally {
    await removeDir(dir);
  }
  const ferry = median(runs.map((x) => x.ferry.perSec));
  const raw = median(runs.map((x) => x.raw.perSec));
  const ratio = median(runs.map((x) => x.ferry.perSec / x.raw.perSec));
  const steady = runs.every((x) => x.ferry.steadyPerSec && x.raw.steadyPerSec) ? median(runs.map((x) => x.ferry.steadyPerSec / x.raw.steadyPerSec)) : undefined;
  const checked = runs.every(
    (x) => x.ferry.complete && x.ferry.succeeded === opts.events && x.ferry.attempts === opts.events && x.ferry.signed === x.ferry.arrived,
  );
  const cpuUs = median(runs.map((x) => x.ferry.serverCpuUsPerDelivery));
  const systemUs = median(runs.map((x) => x.ferry.serverSystemCpuUsPerDelivery));
  const rawSystemUs = median(runs.map((x) => x.raw.clientSystemCpuUsPerRequest));
  const startMs = median(runs.map((x) => x.ferry.serverStartCpuMs));
  const machineUs = median(runs.map((x) => x.ferry.machineCpuUsPerDelivery));
  const rawMachineUs = median(runs.map((x) => x.raw.machineCpuUsPerRequest));
  const rawClientUs = median(runs.map((x) => x.raw.clientCpuUsPerRequest));
  const cpuRatio = median(runs.map((x) => x.ferry.serverCpuUsPerDelivery / x.raw.clientCpuUsPerRequest));
  const steadyCpu = runs.every((x) => x.ferry.steadyServerCpuUsPerDelivery && x.raw.steadyClientCpuUsPerRequest)
    ? {
        server: median(runs.map((x) => x.ferry.steadyServerCpuUsPerDelivery)),
        raw: median(runs.map((x) => x.raw.steadyClientCpuUsPerRequest)),
        ratio: median(runs.map((x) => x.ferry.steadyServerCpuUsPerDelivery / x.raw.steadyClientCpuUsPerRequest)),
      }
    : undefined;
  const floored = runs.every((x) => x.floor !== undefined)
    ? {
        floorCpuUsPerDelivery: median(runs.map((x) => x.floor.cpuUsPerDelivery)),
        floorCpuRatio: round(median(runs.map((x) => x.floor.cpuUsPerDelivery / x.raw.clientCpuUsPerRequest)), 2),
        floorComplete: runs.every((x) => x.floor.complete),
        ...(runs.every((x) => x.floor.steadyCpuUsPerDelivery && x.raw.steadyClientCpuUsPerRequest)
          ? {
              steadyFloorCpuUsPerDelivery: median(runs.map((x) => x.floor.steadyCpuUsPerDelivery)),
              steadyFloorCpuRatio: round(median(runs.map((x) => x.floor.steadyCpuUsPerDelivery / x.raw.steadyClientCpuUsPerRequest)), 2),
            }
          : {}),
      }
    : undefined;
  const summary: DeliverySummary = {
    ferryPerSec: round(ferry),
    rawPerSec: round(raw),
    ratio: round(ratio, 2),
    ...(steady === undefined ? {} : { steadyRatio: round(steady, 2) }),
    goalMet: ratio >= 0.5 && checked,
    serverCpuUsPerDelivery: cpuUs,
    serverSystemCpuUsPerDelivery: systemUs,
    serverStartCpuMs: startMs,
    machineCpuUsPerDelivery: machineUs,
    rawMachineCpuUsPerRequest: rawMachineUs,
    rawClientCpuUsPerRequest: rawClientUs,
    rawClientSystemCpuUsPerRequest: rawSystemUs,
    cpuRatio: round(cpuRatio, 2),
    cpuGoalMet: cpuRatio <= 2 && checked,
    ...(steadyCpu === undefined
      ? {}
      : { steadyServerCpuUsPerDelivery: steadyCpu.server, steadyRawClientCpuUsPerRequest: steadyCpu.raw, steadyCpuRatio: round(steadyCpu.ratio, 2) }),
    ...(floored ?? {}),
  };
  printTable(
    `Delivery (${storeKind}): webhook deliveries/s from a backlog of ${opts.events.toLocaleString('en-US')} events to a local receiver (medians of ${opts.runs} runs; x raw is the median of each run's ratio)`,
    ['system', 'deliveries/s', 'x raw', 'notes'],
    [
      [
        `raw undici Pool (${connections} connections, unsigned, unlogged)`,
        summary.rawPerSec,
        1,
        `reference; client CPU ${rawClientUs} µs/request (${rawSystemUs} in the kernel), machine CPU ${rawMachineUs} µs/request`,
      ],
      [
        'Ferry (signed, attempt logged, leased)',
        summary.ferryPerSec,
        summary.ratio,
        `goal >= 0.5: ${summary.goalMet ? 'met' : 'NOT met'}; per-run ratios ${runs.map((x) => round(x.ferry.perSec / x.raw.perSec, 2)).join(', ')}; ${steady === undefined ? '' : `from the 10,000th arrival on ${summary.steadyRatio}x; `}all succeeded+logged+signed: ${checked}; server CPU ${cpuUs} µs/delivery (${systemUs} in the kernel; ${summary.cpuRatio}x raw's client CPU per request, goal <= 2; ${startMs} ms to start, not counted; ${steadyCpu === undefined ? '' : `from the 10,000th arrival on ${summary.steadyServerCpuUsPerDelivery} against ${summary.steadyRawClientCpuUsPerRequest} µs, ${summary.steadyCpuRatio}x`}), machine CPU ${machineUs} µs/delivery`,
      ],
      ...(floored === undefined
        ? []
        : [
            [
              "floor: claim, sign, send, record (Ferry's parts, no worker)",
              round(median(runs.map((x) => x.floor.perSec))),
              round(median(runs.map((x) => x.floor.perSec / x.raw.perSec)), 2),
              `CPU ${floored.floorCpuUsPerDelivery} µs/delivery, ${floored.floorCpuRatio}x raw's client CPU per request${floored.steadyFloorCpuUsPerDelivery === undefined ? '' : `; from the 10,000th on ${floored.steadyFloorCpuUsPerDelivery} µs, ${floored.steadyFloorCpuRatio}x`}; all delivered and recorded: ${floored.floorComplete}`,
            ] as (string | number)[],
          ]),
    ],
  );
  const path = writeResults('delivery', { settings: { ...opts, connections }, summary, runs });
  log(`wrote ${path}`);
  return summary;
}

/**
 * The floor of one run (`--floor`, PostgreSQL): Ferry's claim, signing, sender and completion
 * with no worker around them (lib/floor.ts), on a copy of the backlog of its own, to the same
 * receiver. Its CPU is its own process's over its loop, as raw undici's is.
 */
async function measureFloor(
  filled: string,
  dir: string,
  receiver: ReturnType<typeof startChild>,
  url: string,
  opts: { events: number; timeoutS: number },
): Promise<{ perSec: number; cpuUsPerDelivery: number; steadyCpuUsPerDelivery?: number; delivered: number; complete: boolean }> {
  const dataDir = await copyData(filled, join(dir, 'data'));
  const floor = startChild('floor.ts');
  try {
    const r = await floor.ask({
      cmd: 'floor',
      url,
      ...bodySource(dataDir),
      count: opts.events,
      connections,
      secret: sharedSecret,
      timeoutMs: opts.timeoutS * 1000,
    });
    if (r.error) throw new Error(r.error);
    const stats = await receiver.ask({ cmd: 'stats' });
    await receiver.ask({ cmd: 'reset' });
    const counts = await deliveryCounts(dataDir);
    return {
      perSec: arrivalRate(stats),
      cpuUsPerDelivery: round((r.cpuMs * 1000) / Math.max(1, r.ok)),
      steadyCpuUsPerDelivery: r.steadyDeliveries > 0 ? round((r.steadyCpuMs * 1000) / r.steadyDeliveries) : undefined,
      delivered: r.ok,
      complete: r.ok === opts.events && r.lost === 0 && stats.signed === opts.events && counts.byDestination['hooks']?.['succeeded'] === opts.events,
    };
  } finally {
    await floor.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main(() =>
    runDelivery({ events: numFlag('events', 100_000), runs: numFlag('runs', 5), timeoutS: numFlag('timeout-s', 180), floor: process.argv.includes('--floor') }),
  );
}
