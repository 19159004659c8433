/**
 * The delivery floor on PostgreSQL (TypeScript via tsx), in its own process: the parts every
 * delivery needs, taken from Ferry's build as they are, with none of the worker around them.
 * It claims due jobs with Ferry's claim (leased, 400 at a time), signs each body with
 * Ferry's `signBody`, posts it through Ferry's HTTP sender with the headers Ferry sends, and
 * records each outcome, its attempt record built as the worker builds it, with Ferry's
 * completion (one statement per 10 ms, as the server).
 * No scheduler, slots, pacing, guards or circuit breakers, no lease renewal, retry policy,
 * events or metrics: what the server's CPU per delivery spends beyond this floor goes with
 * the worker, and what the floor spends beyond raw undici's request is what signing, sending
 * through the guarded transport, claiming and recording cost.
 *
 *   {cmd:'floor', url, databaseUrl, schema, count, connections, secret, timeoutMs}
 *       -> {ok, failed, lost, ms, cpuMs, systemCpuMs, steadyCpuMs?, steadyDeliveries?}
 *
 * The CPU is the process's own over its loop (all threads), as raw undici's client measures
 * its posting loop; from the 10,000th delivery on it is also given apart (warmed up).
 */
import { signBody, SOURCE_HEADER } from '@ferry/webhooks';
import { claim } from '../../../packages/server/dist/store/postgres/pg-claim.js';
import { PgCompletions } from '../../../packages/server/dist/store/postgres/pg-complete.js';
import { createPools, endPools } from '../../../packages/server/dist/store/postgres/pg-pools.js';
import { attemptRecordOf } from '../../../packages/server/dist/delivery/attempt-record.js';
import { createHttpSender } from '../../../packages/server/dist/destinations/http/http-sender.js';
import { userAgent } from '../../../packages/server/dist/util/version.js';
import { sourceHeaderValue } from '../../../packages/server/dist/destinations/webhooks/request.js';
import type { ClaimedDelivery } from '../../../packages/server/dist/store/store.js';

const steadyFrom = 10_000;

async function floor(m: any) {
  const pools = createPools(m.databaseUrl, m.schema, 2);
  const completions = new PgCompletions(pools);
  const sender = createHttpSender({ allowPrivateNetworks: true, allowedNetworks: [], connectionsPerOrigin: m.connections });
  const owner = `floor-${process.pid}`;
  const leaseMs = 60_000;
  const deadline = Date.now() + (m.timeoutMs ?? 300_000);
  const ready: ClaimedDelivery[] = [];
  let claiming: Promise<void> | undefined;
  let exhausted = false;
  let ok = 0;
  let failed = 0;
  let lost = 0;
  let done = 0;
  let atMark: NodeJS.CpuUsage | undefined;
  const recording: Promise<void>[] = [];
  // Claims again, one claim at a time, whenever fewer than one claim's worth of jobs is held.
  const refill = (): Promise<void> =>
    (claiming ??= claim(pools.claim, { destinationId: 'hooks', owner, nowMs: Date.now(), leaseMs, limit: 400 }).then((jobs) => {
      claiming = undefined;
      if (jobs.length === 0) exhausted = true;
      ready.push(...jobs);
    }));
  const deliverOne = async (job: ClaimedDelivery): Promise<void> => {
    const body = Buffer.from(job.body);
    const startedAtMs = Date.now();
    const result = await sender.send({
      url: m.url,
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': userAgent,
        'X-Signature': signBody(body, m.secret),
        [SOURCE_HEADER]: sourceHeaderValue(job),
      },
      body,
      timeoutMs: 10_000,
    });
    const nowMs = Date.now();
    const succeeded = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
    if (succeeded) ok++;
    else failed++;
    if (++done === steadyFrom) atMark = process.cpuUsage(cpu0);
    // Recorded while the lane sends its next job, as the worker frees a slot before the record.
    recording.push(
      completions
        .complete({
          id: job.id,
          owner,
          createdAtMs: job.createdAtMs,
          kind: job.kind,
          nowMs,
          firstAttemptAtMs: job.firstAttemptAtMs ?? startedAtMs,
          attempts: [attemptRecordOf(result, job.trigger)],
          outcome: succeeded ? { status: 'succeeded' } : { status: 'dead', reason: 'non_retryable_response', lastError: result.errorMessage ?? 'failed' },
        })
        .then((kept) => {
          if (!kept) lost++;
        }),
    );
  };
  const lane = async (): Promise<void> => {
    while (Date.now() < deadline) {
      if (ready.length < 400 && !exhausted) void refill();
      const job = ready.shift();
      if (job === undefined) {
        if (exhausted && claiming === undefined) return;
        await (claiming ?? refill());
        continue;
      }
      await deliverOne(job);
    }
  };
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(Array.from({ length: m.connections }, lane));
  await Promise.all(recording);
  const cpu = process.cpuUsage(cpu0);
  const ms = performance.now() - started;
  await sender.close();
  await endPools(pools);
  const steady = atMark === undefined ? {} : { steadyCpuMs: (cpu.user + cpu.system - atMark.user - atMark.system) / 1000, steadyDeliveries: done - steadyFrom };
  return { ok, failed, lost, ms, cpuMs: (cpu.user + cpu.system) / 1000, systemCpuMs: cpu.system / 1000, ...steady };
}

process.on('message', (m: any) => void answer(m));

async function answer(m: any): Promise<void> {
  try {
    if (m.cmd !== 'floor') throw new Error(`unknown command ${String(m.cmd)}`);
    process.send!({ id: m.id, ...(await floor(m)) });
  } catch (error) {
    process.send!({ id: m.id, error: String((error as Error).stack ?? error) });
  }
}
