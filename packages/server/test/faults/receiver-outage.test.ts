import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, test } from 'node:test';
import { ManualClock } from '../../src/util/clock.js';
import { startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { until } from '../helpers/until.js';
import { within } from '../helpers/within.js';
import { faultSeed, seededRandom } from './support.js';

/** Longest the receiver may take to go up or down, or a round's requests to reach it, before the test fails instead of hanging. */
const ROUND_DEADLINE_MS = 30_000;

/** More claim rounds than a handful of jobs can need at one time (each round claims at least one). */
const MAX_CLAIM_ROUNDS = 50;

/** What the receiver does: not listen at all (connection refused), answer 503, never answer, or 200. */
type Mode = 'refused' | '503' | 'hang' | 'up';

/**
 * A real receiver on one fixed loopback port that can go down and come back on the same port,
 * so the destination's URL stays the same through the whole outage.
 */
async function startOutageReceiver(initial: Mode) {
  let mode: Mode = 'up';
  const delivered = new Map<string, number>();
  let hits = 0;
  const hanging = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits++;
      if (mode === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      if (mode === '503') {
        res.writeHead(503, { 'content-type': 'text/plain' }).end('maintenance');
        return;
      }
      const id = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messageId: string }).messageId;
      delivered.set(id, (delivered.get(id) ?? 0) + 1);
      res.writeHead(200).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await within(ROUND_DEADLINE_MS, 'the receiver to listen', once(server, 'listening'));
  const { port } = server.address() as AddressInfo;
  const close = async () => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await within(ROUND_DEADLINE_MS, 'the receiver to close', new Promise<void>((r) => server.close(() => r())));
  };
  const receiver = {
    url: `http://127.0.0.1:${port}/hook`,
    delivered,
    hits: () => hits,
    /** Requests held open without an answer right now. */
    hanging: () => hanging.size,
    async set(next: Mode) {
      if (next === mode) return;
      if (mode === 'hang') for (const res of hanging) res.destroy();
      if (next === 'refused') await close();
      if (mode === 'refused') {
        server.listen(port, '127.0.0.1');
        await within(ROUND_DEADLINE_MS, 'the receiver to listen again', once(server, 'listening'));
      }
      mode = next;
    },
    async close() {
      if (mode !== 'refused') await close();
    },
  };
  await receiver.set(initial);
  return receiver;
}
type OutageReceiver = Awaited<ReturnType<typeof startOutageReceiver>>;

interface DeliveryDetail {
  id: number;
  status: string;
  messageId: string;
  attemptCount: number;
  firstAttemptAt: string | null;
  nextAttemptAt: string | null;
  deadReason: string | null;
  lastError: string | null;
  attempts: { startedAt: string; latencyMs: number; statusCode: number | null; errorClass: string | null }[];
}

async function pending(ferry: TestFerry): Promise<DeliveryDetail[]> {
  return (await ferry.admin('GET', '/deliveries?status=pending&limit=1000')).json.deliveries;
}
async function detail(ferry: TestFerry, id: number): Promise<DeliveryDetail> {
  return (await ferry.admin('GET', `/deliveries/${id}`)).json;
}

/**
 * Sends everything due, with the receiver's mode following the clock (`modeAt`) at each claim
 * round. The sender's time limit runs on the manual clock: once every request of a round
 * hangs at the receiver, the clock moves past the limit, so a hang costs no real time.
 */
async function runDue(ferry: TestFerry, clock: ManualClock, receiver: OutageReceiver, modeAt: (elapsedMs: number) => Mode, t0: number, timeoutMs: number) {
  const { worker } = ferry.ferry;
  for (let round = 0; round < MAX_CLAIM_ROUNDS; round++) {
    await receiver.set(modeAt(clock.now() - t0));
    const claimed = await worker.tick();
    if (claimed === 0) return;
    if (modeAt(clock.now() - t0) === 'hang') {
      await until(() => receiver.hanging() === claimed, `${claimed} requests to hang at the receiver`, ROUND_DEADLINE_MS);
      clock.advance(timeoutMs);
    }
    await ferry.settled();
  }
  throw new Error(`jobs were still due after ${MAX_CLAIM_ROUNDS} claim rounds at one time`);
}

/**
 * Drives the worker through an outage with the manual clock: the receiver's mode follows the
 * clock (`modeAt`), the clock jumps to the earliest due retry each round, and one millisecond
 * before every due time a round is run to prove that nothing is attempted early. Records, for
 * each delivery, the due time the store announced for each of its retries.
 */
async function driveOutage(
  ferry: TestFerry,
  clock: ManualClock,
  receiver: OutageReceiver,
  modeAt: (elapsedMs: number) => Mode,
  timeoutMs: number,
  maxRounds: number,
) {
  const t0 = clock.now();
  const dueTimes = new Map<number, number[]>(); // id -> [due of attempt 2, due of attempt 3, ...]
  const attemptsSoFar = (list: DeliveryDetail[]) => list.reduce((n, d) => n + d.attemptCount, 0);
  let earlyRounds = 0;
  for (let round = 0; round < maxRounds; round++) {
    await runDue(ferry, clock, receiver, modeAt, t0, timeoutMs);
    const open = await pending(ferry);
    for (const d of open) {
      const dues = dueTimes.get(d.id) ?? [];
      if (dues.length < d.attemptCount) dues.push(Date.parse(d.nextAttemptAt!));
      dueTimes.set(d.id, dues);
    }
    if (open.length === 0) return { dueTimes, earlyRounds, t0 };
    const next = Math.min(...open.map((d) => Date.parse(d.nextAttemptAt!)));
    // One millisecond early: nothing may be attempted, whatever the receiver does.
    if (next - 1 > clock.now()) {
      clock.set(next - 1);
      await runDue(ferry, clock, receiver, modeAt, t0, timeoutMs);
      const still = await pending(ferry);
      assert.equal(attemptsSoFar(still), attemptsSoFar(open), `an attempt was made before it was due (at ${new Date(clock.now()).toISOString()})`);
      earlyRounds++;
    }
    clock.set(next);
  }
  throw new Error(`the outage did not end within ${maxRounds} rounds`);
}

/** The breaker off: these tests follow each event's own retry schedule through the outage, which an open circuit would hold. */
const noBreaker = { circuitBreaker: { enabled: false } };

/** Delay before retry `retry` (1 = first retry) per the settings, before jitter. */
const baseDelay = (r: { initialDelayMs: number; multiplier: number; maxDelayMs: number }, retry: number) =>
  Math.min(r.maxDelayMs, r.initialDelayMs * r.multiplier ** (retry - 1));

const expectedClass: Record<Exclude<Mode, 'up'>, string> = { refused: 'connect', '503': 'http', hang: 'timeout' };

describe('receiver outage', () => {
  let ferry: TestFerry | undefined;
  let receiver: OutageReceiver | undefined;
  afterEach(async () => {
    await ferry?.stop();
    await receiver?.close();
    ferry = receiver = undefined;
  });

  test('refused, then 503s, then hangs, then recovery: nothing early, everything delivered after recovery', async (t) => {
    const seed = faultSeed();
    t.diagnostic(`seed ${seed} (retry jitter; replay with FERRY_FAULTS_SEED=${seed})`);
    const retry = { initialDelayMs: 1000, multiplier: 2, maxDelayMs: 8000, jitter: 0.2, windowMs: 120_000, maxRetryAfterMs: 10_000 };
    const timeoutMs = 500;
    const clock = new ManualClock();
    receiver = await startOutageReceiver('refused');
    ferry = await startFerry(testConfig([webhooksDestination('hooks', [receiver.url], noBreaker)], { delivery: { timeoutMs, leaseMs: 5000, retry } }), {
      clock,
      deliver: false,
      random: seededRandom(seed),
    });
    const ids = Array.from({ length: 4 }, (_, i) => `outage-${i}`);
    const res = await ferry.send('/v1/batch', { batch: ids.map((messageId, i) => ({ type: 'track', userId: `u${i}`, event: 'E', messageId })) });
    assert.equal(res.status, 200);

    // Outage phases on the manual clock, from the first attempt.
    const modeAt = (ms: number): Mode => (ms < 4000 ? 'refused' : ms < 12_000 ? '503' : ms < 20_000 ? 'hang' : 'up');
    const { dueTimes, earlyRounds, t0 } = await driveOutage(ferry, clock, receiver, modeAt, timeoutMs, 200);

    // Everything arrived once recovered, exactly once here (no lease expired: leaseMs > timeoutMs).
    assert.deepEqual([...receiver.delivered.keys()].sort(), [...ids].sort());
    assert.ok(
      [...receiver.delivered.values()].every((n) => n === 1),
      'each event arrived once',
    );
    const seenModes = new Set<string>();
    for (const d of (await ferry.admin('GET', '/deliveries?status=succeeded&limit=1000')).json.deliveries as DeliveryDetail[]) {
      const full = await detail(ferry, d.id);
      const dues = dueTimes.get(d.id) ?? [];
      assert.equal(full.attempts.length, dues.length + 1);
      full.attempts.forEach((a, i) => {
        const startedAt = Date.parse(a.startedAt);
        const mode = modeAt(startedAt - t0);
        seenModes.add(mode);
        // The attempt log tells the truth about the outage.
        if (mode === 'up') assert.equal(a.statusCode, 200);
        else assert.equal(a.errorClass, expectedClass[mode], `attempt ${i + 1} of ${d.messageId} during '${mode}'`);
        if (mode === '503') assert.equal(a.statusCode, 503);
        if (i === 0) return;
        const due = dues[i - 1]!;
        assert.ok(startedAt >= due, `attempt ${i + 1} of ${d.messageId} started before it was due`);
        // And the schedule itself is the policy's: base delay ±jitter after the previous attempt
        // ended (a hang ends at the time limit).
        const previous = full.attempts[i - 1]!;
        const delay = due - (Date.parse(previous.startedAt) + previous.latencyMs);
        const base = baseDelay(retry, i);
        assert.ok(
          delay >= Math.floor(base * (1 - retry.jitter)) && delay <= Math.ceil(base * (1 + retry.jitter)),
          `retry ${i} of ${d.messageId} was scheduled ${delay} ms later; the policy says ${base} ms ±${retry.jitter * 100} %`,
        );
      });
      assert.equal(full.attempts.at(-1)!.statusCode, 200, 'the last attempt is the successful one');
    }
    assert.deepEqual([...seenModes].sort(), ['503', 'hang', 'refused', 'up'], 'every phase of the outage saw attempts');
    assert.ok(earlyRounds > 0);
    t.diagnostic(`${receiver.hits()} requests reached the receiver; ${earlyRounds} rounds run 1 ms before a due time sent nothing`);
  });

  test('an outage longer than the retry window: dead letters with retry_window_exhausted and the last error; replay delivers', async (t) => {
    const retry = { initialDelayMs: 1000, multiplier: 2, maxDelayMs: 4000, jitter: 0, windowMs: 10_000, maxRetryAfterMs: 10_000 };
    const timeoutMs = 200;
    const clock = new ManualClock();
    receiver = await startOutageReceiver('503');
    ferry = await startFerry(testConfig([webhooksDestination('hooks', [receiver.url], noBreaker)], { delivery: { timeoutMs, leaseMs: 5000, retry } }), {
      clock,
      deliver: false,
    });
    const ids = ['late-0', 'late-1', 'late-2'];
    const res = await ferry.send('/v1/batch', { batch: ids.map((messageId) => ({ type: 'track', userId: 'u', event: 'E', messageId })) });
    assert.equal(res.status, 200);

    // 503s first, then the receiver disappears for good: the last error is the refused connection.
    const modeAt = (ms: number): Mode => (ms < 6000 ? '503' : 'refused');
    const { dueTimes } = await driveOutage(ferry, clock, receiver, modeAt, timeoutMs, 100);

    const dead = (await ferry.admin('GET', '/dead-letters?limit=1000')).json.deliveries as DeliveryDetail[];
    assert.equal(dead.length, ids.length);
    for (const d of dead) {
      assert.equal(d.deadReason, 'retry_window_exhausted');
      assert.match(d.lastError!, /-> connect/, `the last error is the last attempt's: ${d.lastError}`);
      const full = await detail(ferry, d.id);
      const first = Date.parse(full.firstAttemptAt!);
      const starts = full.attempts.map((a) => Date.parse(a.startedAt));
      assert.equal(starts.at(-1)! - first, retry.windowMs, 'the last attempt is at the end of the window');
      assert.ok(
        starts.every((s) => s <= first + retry.windowMs),
        'no attempt after the window',
      );
      // 0, 1, 3, 7 (4 s cap), then the end of the window at 10 s.
      assert.deepEqual(
        starts.map((s) => s - first),
        [0, 1000, 3000, 7000, 10_000],
      );
      assert.deepEqual(
        dueTimes.get(d.id)!.map((due) => due - first),
        [1000, 3000, 7000, 10_000],
      );
      assert.deepEqual(
        full.attempts.map((a) => a.errorClass),
        ['http', 'http', 'http', 'connect', 'connect'],
      );
    }

    // Recovery after the window: nothing is retried on its own…
    await receiver.set('up');
    clock.advance(3_600_000);
    await ferry.idle();
    assert.equal(receiver.delivered.size, 0, 'a dead letter is not retried by itself');
    // …and a replay delivers every one.
    const replay = await ferry.admin('POST', '/dead-letters/replay', { destinationId: 'hooks' });
    assert.equal(replay.json.replayed, ids.length);
    await ferry.idle();
    assert.deepEqual([...receiver.delivered.keys()].sort(), ids);
    t.diagnostic(`dead-lettered after ${retry.windowMs} ms of outage with 5 attempts each; replay delivered all ${ids.length}`);
  });
});
