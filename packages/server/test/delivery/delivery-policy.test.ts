import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import type { FerryOptions } from '../../src/app.js';
import type { FerryConfig } from '../../src/config/model.js';
import type { Pacing } from '../../src/delivery/pacing.js';
import { readyLimits } from '../../src/delivery/ready-limits.js';
import { createHttpSender } from '../../src/destinations/http/http-sender.js';
import type { SendRequest, SendResult, WebhookSender } from '../../src/destinations/http/sender.js';
import { ManualClock } from '../../src/util/clock.js';
import { capturedLogger } from '../helpers/captured-logger.js';
import { startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { until } from '../helpers/until.js';

const hour = 3_600_000;
// Retry settings small enough to reason about: 1 s, 2 s, 4 s … capped at 60 s, no jitter.
const delivery = {
  timeoutMs: 300,
  retry: { initialDelayMs: 1000, multiplier: 2, maxDelayMs: 60_000, jitter: 0, windowMs: 4 * hour, maxRetryAfterMs: 600_000 },
};

/**
 * A Ferry whose worker is driven by hand on `clock`; its webhook time limits run on that clock
 * too, so an endpoint that never answers times out when the test moves the clock.
 */
function startOnClock(config: FerryConfig, clock: ManualClock, options: Partial<FerryOptions> = {}): Promise<TestFerry> {
  return startFerry(config, { clock, deliver: false, ...options });
}

/**
 * The webhook sender Ferry builds for `config` on `clock`, and the URLs whose exchanges are
 * over, in order.
 */
function senderOnClock(config: FerryConfig, clock: ManualClock): { sender: WebhookSender; finished: string[] } {
  const real = createHttpSender({
    ...config.network,
    connectionsPerOrigin: config.delivery.perDestinationConcurrency,
    clock,
    timers: clock.timers,
  });
  const finished: string[] = [];
  const send = async (request: SendRequest): Promise<SendResult> => {
    const result = await real.send(request);
    finished.push(result.url);
    return result;
  };
  return { finished, sender: { send, close: () => real.close() } };
}

/** The breaker off, for tests of the retry schedule and the slots that fail a URL many times in a row. */
const noBreaker = { circuitBreaker: { enabled: false } };

/** A Ferry on a manual clock with one destination `hooks` posting to `urls`. */
async function setup(urls: string[], extra: Record<string, unknown> = {}) {
  const clock = new ManualClock();
  const ferry = await startOnClock(testConfig([webhooksDestination('hooks', urls, extra)], { delivery }), clock);
  return { clock, ferry };
}

async function deliveries(ferry: TestFerry, status?: string) {
  const res = await ferry.admin('GET', `/deliveries${status ? `?status=${status}` : ''}`);
  return res.json.deliveries as any[];
}

describe('delivery decisions', () => {
  let a: TestReceiver;
  let b: TestReceiver;
  let ferry: TestFerry | undefined;
  before(async () => {
    a = await startReceiver();
    b = await startReceiver();
  });
  afterEach(async () => {
    await ferry?.stop();
    ferry = undefined;
    a.requests.length = 0;
    b.requests.length = 0;
    a.reply({ status: 200 });
    b.reply({ status: 200 });
  });
  after(async () => {
    await a.close();
    await b.close();
  });

  test('5xx is retried with backoff, not before it is due, then succeeds', async () => {
    const s = await setup([a.url]);
    ferry = s.ferry;
    a.reply({ status: 503 });
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    await ferry.idle();
    assert.equal(a.requests.length, 1);
    const [pending] = await deliveries(ferry, 'pending');
    assert.equal(pending.attemptCount, 1);
    assert.equal(Date.parse(pending.nextAttemptAt) - s.clock.now(), 1000);
    assert.match(pending.lastError, /HTTP 503/);

    s.clock.advance(999);
    await ferry.idle();
    assert.equal(a.requests.length, 1, 'nothing is sent before the retry is due');

    s.clock.advance(1);
    await ferry.idle();
    assert.equal(a.requests.length, 2);
    const [again] = await deliveries(ferry, 'pending');
    assert.equal(Date.parse(again.nextAttemptAt) - s.clock.now(), 2000, 'the second delay doubles');

    a.reply({ status: 200 });
    s.clock.advance(2000);
    await ferry.idle();
    assert.equal(a.requests.length, 3);
    assert.equal((await deliveries(ferry, 'succeeded')).length, 1);
    assert.equal(a.requests[0]!.body.toString(), a.requests[2]!.body.toString(), 'a retry sends the same bytes');
  });

  test('no answer within the time limit is logged as a timeout and retried later', async () => {
    const s = await setup([a.url]);
    ferry = s.ferry;
    a.reply('hang');
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    const run = ferry.idle();
    await a.waitFor(1);
    s.clock.advance(delivery.timeoutMs);
    await run;
    const [pending] = await deliveries(ferry, 'pending');
    const detail = await ferry.admin('GET', `/deliveries/${pending.id}`);
    assert.equal(detail.json.attempts.length, 1);
    assert.equal(detail.json.attempts[0].errorClass, 'timeout');
    assert.equal(detail.json.attempts[0].latencyMs, delivery.timeoutMs);
    a.reply({ status: 204 });
    s.clock.advance(1000);
    await ferry.idle();
    assert.equal((await deliveries(ferry, 'succeeded')).length, 1);
  });

  /** One event to `a`, which never answers, and `b`, which answers `bReply`; the timeout log lines. */
  async function timeoutBeside(bReply: { status: number }) {
    const { lines, logger } = capturedLogger();
    const clock = new ManualClock();
    const config = testConfig([webhooksDestination('hooks', [a.url, b.url])], { delivery });
    const { sender, finished } = senderOnClock(config, clock);
    ferry = await startOnClock(config, clock, { logger, sender });
    a.reply('hang');
    b.reply(bReply);
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    const run = ferry.idle();
    await a.waitFor(1);
    // b's answer is in before the time limit runs out for a.
    await until(() => finished.includes(b.url), "b's exchange to end");
    clock.advance(delivery.timeoutMs);
    await run;
    return lines.filter((l) => /timed out/.test(l.msg));
  }

  test('a URL that times out while another answers 2xx is logged as such: the event is done, nothing will retry', async () => {
    const logged = await timeoutBeside({ status: 200 });
    assert.deepEqual(
      logged.map((l) => [l.level, l.url, l.outcome, l.msg]),
      [[40, a.url, 'succeeded', 'webhook timed out after 300 ms; another URL answered 2xx, so the event is done and this URL is not retried']],
    );
    assert.equal((await deliveries(ferry!, 'succeeded')).length, 1);
  });

  test('a URL that times out while the other fails temporarily is logged as retried', async () => {
    const logged = await timeoutBeside({ status: 503 });
    assert.deepEqual(
      logged.map((l) => [l.level, l.url, l.outcome, l.msg]),
      [[40, a.url, 'pending', 'webhook timed out after 300 ms; will retry']],
    );
    assert.equal((await deliveries(ferry!, 'pending')).length, 1);
  });

  test('retries stop 4 hours after the first attempt: dead letter with the last error', async () => {
    const s = await setup([a.url], noBreaker);
    ferry = s.ferry;
    a.reply({ status: 500, body: 'still broken' });
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    const first = s.clock.now();
    let rounds = 0;
    while ((await deliveries(ferry, 'pending')).length > 0 && rounds < 400) {
      await ferry.idle();
      const [p] = await deliveries(ferry, 'pending');
      if (p) s.clock.set(Date.parse(p.nextAttemptAt));
      rounds++;
    }
    const [dead] = await deliveries(ferry, 'dead');
    assert.ok(dead, 'dead-lettered');
    assert.equal(dead.deadReason, 'retry_window_exhausted');
    assert.match(dead.lastError, /HTTP 500/);
    assert.equal(s.clock.now() - first, 4 * hour, 'the last attempt is at the end of the window');
    // What these settings give, worked out by hand: retries after 1, 2, 4, 8, 16 and 32 s,
    // then every 60 s (the cap) while the window allows, and a last attempt at its end.
    // [attempt, seconds after the first attempt's start]
    const schedule: [number, number][] = [
      [1, 0],
      [2, 1],
      [3, 3],
      [4, 7],
      [5, 15],
      [6, 31],
      [7, 63],
      [8, 123],
      [9, 183],
      [244, 14_283],
      [245, 14_343],
      [246, 14_400],
    ];
    assert.equal(a.requests.length, 246);
    const detail = await ferry.admin('GET', `/deliveries/${dead.id}`);
    const attempts = detail.json.attempts as any[];
    assert.equal(attempts.length, 246);
    const offsets = schedule.map(([n]) => (Date.parse(attempts[n - 1].startedAt) - first) / 1000);
    assert.deepEqual(
      offsets,
      schedule.map(([, seconds]) => seconds),
    );
    assert.equal(detail.json.attempts.at(-1).responseBody, 'still broken');
  });

  test('a 4xx other than 408/429 dead-letters at once; replay sends it again with the same messageId', async () => {
    const s = await setup([a.url]);
    ferry = s.ferry;
    a.reply({ status: 404 });
    await ferry.send('/v1/track', { userId: 'u', event: 'E', messageId: 'replay-me' });
    await ferry.idle();
    const letters = await ferry.admin('GET', '/dead-letters');
    assert.equal(letters.json.deliveries.length, 1);
    assert.equal(letters.json.deliveries[0].deadReason, 'non_retryable_response');
    a.reply({ status: 200 });
    const replay = await ferry.admin('POST', `/dead-letters/${letters.json.deliveries[0].id}/replay`);
    assert.deepEqual(replay.json, { replayed: 1 });
    await ferry.idle();
    assert.equal(a.requests.length, 2);
    assert.equal(a.requests[1]!.json.messageId, 'replay-me');
    const detail = await ferry.admin('GET', `/deliveries/${letters.json.deliveries[0].id}`);
    assert.equal(detail.json.status, 'succeeded');
    assert.deepEqual(
      detail.json.attempts.map((x: any) => x.trigger),
      ['scheduled', 'manual'],
    );
  });

  test('bulk replay takes every dead letter of a destination', async () => {
    const s = await setup([a.url]);
    ferry = s.ferry;
    a.reply({ status: 400 });
    await ferry.send('/v1/batch', { batch: [1, 2, 3].map((i) => ({ type: 'track', userId: `u${i}`, event: 'E' })) });
    await ferry.idle();
    assert.equal((await deliveries(ferry, 'dead')).length, 3);
    a.reply({ status: 200 });
    for (const bad of [{ destinationID: 'hooks' }, { since: 'yesterday' }, { ids: 'all' }]) {
      const refused = await ferry.admin('POST', '/dead-letters/replay', bad);
      assert.equal(refused.status, 400, JSON.stringify(bad));
    }
    assert.equal((await deliveries(ferry, 'dead')).length, 3, 'a refused filter replays nothing');
    const replay = await ferry.admin('POST', '/dead-letters/replay', { destinationId: 'hooks' });
    assert.equal(replay.json.replayed, 3);
    await ferry.idle();
    assert.equal((await deliveries(ferry, 'succeeded')).length, 3);
  });

  test('408 and 429 are retried; Retry-After is honoured', async () => {
    const s = await setup([a.url]);
    ferry = s.ferry;
    a.reply({ status: 429, headers: { 'retry-after': '120' } });
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    await ferry.idle();
    const [p] = await deliveries(ferry, 'pending');
    assert.equal(Date.parse(p.nextAttemptAt) - s.clock.now(), 120_000);
    a.reply({ status: 408 });
    s.clock.advance(120_000);
    await ferry.idle();
    const [p2] = await deliveries(ferry, 'pending');
    assert.equal(p2.attemptCount, 2);
  });

  test('a redirect is not followed and counts as a failure', async () => {
    const s = await setup([a.url]);
    ferry = s.ferry;
    a.reply({ status: 302, headers: { location: `${b.url}/elsewhere` } });
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    await ferry.idle();
    assert.equal(b.requests.length, 0);
    const [dead] = await deliveries(ferry, 'dead');
    assert.match(dead.lastError, /HTTP 302/);
  });

  test('any one URL answering 2xx ends the event: the failing URL is not retried', async () => {
    const s = await setup([a.url, b.url]);
    ferry = s.ferry;
    a.reply({ status: 500 });
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    await ferry.idle();
    s.clock.advance(hour);
    await ferry.idle();
    assert.equal(a.requests.length, 1);
    assert.equal(b.requests.length, 1);
    const [done] = await deliveries(ferry, 'succeeded');
    const detail = await ferry.admin('GET', `/deliveries/${done.id}`);
    const byUrl = Object.fromEntries(detail.json.attempts.map((x: any) => [x.url, x]));
    assert.equal(byUrl[a.url].statusCode, 500);
    assert.equal(byUrl[a.url].errorClass, 'http');
    assert.equal(byUrl[b.url].statusCode, 200);
  });

  test('one URL failing temporarily and another permanently is retried', async () => {
    const s = await setup([a.url, b.url]);
    ferry = s.ferry;
    a.reply({ status: 503 });
    b.reply({ status: 401 });
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    await ferry.idle();
    assert.equal((await deliveries(ferry, 'pending')).length, 1);
  });

  test('the attempt log keeps the first KB of the response body', async () => {
    const s = await setup([a.url]);
    ferry = s.ferry;
    a.reply({ status: 422, body: 'x'.repeat(5000) });
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    await ferry.idle();
    const [dead] = await deliveries(ferry, 'dead');
    const detail = await ferry.admin('GET', `/deliveries/${dead.id}`);
    const attempt = detail.json.attempts[0];
    assert.equal(attempt.responseBody.length, 1024);
    assert.equal(attempt.statusCode, 422);
    assert.equal(typeof attempt.latencyMs, 'number');
    assert.equal(attempt.trigger, 'scheduled');
  });

  test('without a shared secret no X-Signature header is sent', async () => {
    const s = await setup([a.url], { settings: { sharedSecret: undefined } });
    ferry = s.ferry;
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    await ferry.idle();
    assert.equal(a.requests.length, 1);
    assert.equal(a.requests[0]!.headers['x-signature'], undefined);
  });

  test('a token in a URL query never reaches the attempt log, the last error or the admin API', async () => {
    const s = await setup([`${a.url}/hook?token=very-secret-token&team=x`]);
    ferry = s.ferry;
    a.reply({ status: 500 });
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    await ferry.idle();
    assert.equal(a.requests[0]!.path, '/hook?token=very-secret-token&team=x', 'the receiver gets the real URL');
    const [pending] = await deliveries(ferry, 'pending');
    const detail = await ferry.admin('GET', `/deliveries/${pending.id}`);
    const text = JSON.stringify([pending, detail.json]);
    assert.ok(!text.includes('very-secret-token'));
    assert.match(detail.json.attempts[0].url, /token=\[redacted\]/);
    assert.match(pending.lastError, /token=\[redacted\]/);
  });

  test('a replay starts the backoff again in its fresh window', async () => {
    const s = await setup([a.url], noBreaker);
    ferry = s.ferry;
    a.reply({ status: 500 });
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    for (let round = 0; round < 400 && (await deliveries(ferry, 'pending')).length > 0; round++) {
      await ferry.idle();
      const [p] = await deliveries(ferry, 'pending');
      if (p) s.clock.set(Date.parse(p.nextAttemptAt));
    }
    const [dead] = await deliveries(ferry, 'dead');
    assert.equal((await ferry.admin('POST', `/dead-letters/${dead.id}/replay`)).status, 200);
    await ferry.idle();
    const [again] = await deliveries(ferry, 'pending');
    assert.equal(again.attemptCount, 1, 'attempts are counted within the new window');
    assert.equal(Date.parse(again.nextAttemptAt) - s.clock.now(), 1000, 'the first retry after a replay comes after the initial delay');
  });

  test('dead letters of a deleted destination are not replayed', async () => {
    const s = await setup([a.url]);
    ferry = s.ferry;
    a.reply('hang');
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    assert.equal((await ferry.admin('DELETE', '/destinations/hooks')).status, 204);
    const [dead] = await deliveries(ferry, 'dead');
    assert.equal(dead.deadReason, 'destination_deleted');
    assert.equal((await ferry.admin('POST', `/dead-letters/${dead.id}/replay`)).status, 404);
    assert.equal((await ferry.admin('POST', '/dead-letters/replay', {})).json.replayed, 0);
    assert.equal((await deliveries(ferry, 'pending')).length, 0);
  });

  /** The pending deliveries, and those of them leased at the clock's time for 60 s. */
  async function pendingAndLeased(f: TestFerry, clock: ManualClock) {
    const pending = (await f.admin('GET', '/deliveries?status=pending&limit=1000')).json.deliveries as any[];
    return { pending, leased: pending.filter((d) => Date.parse(d.nextAttemptAt) === clock.now() + 60_000) };
  }

  /** A Ferry driven by hand, one destination at `url`, with the default lease, timeout and slots. */
  async function startWithDefaultSlots(url: string, claimBatchSize: number) {
    const clock = new ManualClock();
    const settings = { ...delivery, timeoutMs: 5000, leaseMs: 60_000, perDestinationConcurrency: 16, concurrency: 64, claimBatchSize };
    const started = await startOnClock(testConfig([webhooksDestination('hooks', [url], noBreaker)], { delivery: settings }), clock);
    ferry = started;
    return { clock, settings, ferry: started };
  }

  /** 120 jobs for a receiver that never answers: after one round, 16 sent and 80 held ready. */
  async function sixteenSentEightyReady(slow: TestReceiver) {
    const { clock, ferry } = await startWithDefaultSlots(slow.url, 100);
    await ferry.send('/v1/batch', { batch: Array.from({ length: 120 }, (_, i) => ({ type: 'track', userId: `u${i}`, event: 'E' })) });
    await ferry.ferry.worker.tick();
    await slow.waitFor(16);
    const { leased } = await pendingAndLeased(ferry, clock);
    assert.equal(leased.length, 96, '16 sending and 80 ready, claimed in one round');
    return { clock, ferry, held: leased.map((d) => d.id as number) };
  }

  test('with the default lease and timeout, and no exchange seen yet, a destination holds 80 jobs ready beyond its 16 busy slots', async () => {
    const slow = await startReceiver('hang');
    try {
      await sixteenSentEightyReady(slow);
      assert.equal(slow.requests.length, 16, 'no more requests than slots');
    } finally {
      // Dropping the hanging requests lets the stop below finish without waiting for timeouts.
      await slow.close();
    }
  });

  test('a destination seen answering fast holds a whole claim batch ready, claimed in one round', async () => {
    const receiver = await startReceiver({ status: 200 });
    try {
      const { clock, settings, ferry } = await startWithDefaultSlots(receiver.url, 400);
      await ferry.send('/v1/batch', { batch: Array.from({ length: 20 }, (_, i) => ({ type: 'track', userId: `u${i}`, event: 'E' })) });
      await ferry.idle();
      assert.equal(receiver.requests.length, 20);
      // Now the endpoint stops answering: what matters is the pace seen so far.
      receiver.reply('hang');
      await ferry.send('/v1/batch', { batch: Array.from({ length: 500 }, (_, i) => ({ type: 'track', userId: `v${i}`, event: 'E' })) });
      await ferry.ferry.worker.tick();
      await receiver.waitFor(36);
      const { pending, leased } = await pendingAndLeased(ferry, clock);
      assert.equal(pending.length, 500);
      assert.equal(leased.length, 400, '16 sending and 384 ready, not 16 and 80');
      // Exchanges in flight count with their age: 3 s unanswered make the next claims shallow
      // at once (54,000 / (2 x 3,000) = 9 per slot), before any of them times out.
      const { pacing } = ferry.ferry.worker as unknown as { pacing: Pacing };
      const limits = () => readyLimits(settings, { destination: pacing.slowestExchange(clock.now(), 'hooks'), any: pacing.slowestExchange(clock.now()) });
      assert.equal(limits().perDestination, 400);
      clock.advance(3000);
      assert.equal(limits().perDestination, 16 * 9);
    } finally {
      await receiver.close();
    }
  });

  test('jobs held ready that can no longer start within their lease go back to the queue at once, not when it runs out', async () => {
    const slow = await startReceiver('hang');
    let closed = false;
    try {
      const { clock, ferry, held } = await sixteenSentEightyReady(slow);
      // 55 s on, a ready job would need 5 s for the head and 1 s for the body: past its 60 s
      // lease. On the way the hanging exchanges time out (at 5 s), which frees their slots for
      // the jobs held ready.
      clock.advance(55_000);
      await slow.close();
      closed = true;
      await ferry.settled();
      assert.equal(slow.requests.length, 16, 'no job held ready was started');
      // The next round starts none of the 80 held ready and hands them back, due again with
      // their old place in line, before the 24 never claimed: its claim for its 16 free slots
      // takes them again (and they fail too: the receiver is gone). Had they waited out their
      // leases, it would have claimed from the 24 instead.
      await ferry.ferry.worker.tick();
      await ferry.settled();
      const pending = (await ferry.admin('GET', '/deliveries?status=pending&limit=1000')).json.deliveries as any[];
      assert.equal(pending.length, 120);
      const sent = pending.filter((d) => d.attemptCount === 1);
      assert.equal(sent.length, 32, 'two rounds of 16 sent, failed, and wait for their retry');
      assert.ok(sent.every((d) => Date.parse(d.nextAttemptAt) === clock.now() + 1000));
      assert.deepEqual(
        sent.filter((d) => !held.includes(d.id)).map((d) => d.id),
        [],
        'the second round sent jobs that had been held ready',
      );
    } finally {
      if (!closed) await slow.close();
    }
  });

  test('jobs held ready for a destination disabled meanwhile go back to the queue at the next round', async () => {
    const slow = await startReceiver('hang');
    try {
      const { clock, ferry } = await sixteenSentEightyReady(slow);
      assert.equal((await ferry.admin('PATCH', '/destinations/hooks', { enabled: false })).status, 200);
      await ferry.ferry.worker.tick();
      const { pending, leased } = await pendingAndLeased(ferry, clock);
      assert.equal(pending.length, 120);
      assert.equal(leased.length, 16, 'only the 16 in flight stay leased; the 80 ready are due again');
      assert.equal(slow.requests.length, 16, 'none of them was sent');
    } finally {
      await slow.close();
    }
  });

  test('jobs held ready over all destinations are bounded by the global slots as well', async () => {
    const clock = new ManualClock();
    const slow = await startReceiver('hang');
    try {
      const config = testConfig(
        ['x', 'y', 'z'].map((p) => webhooksDestination(`d-${p}`, [`${slow.url}/${p}`])),
        // 16 slots in all, 16 per destination: 80 may be held ready in all (16 x 5), not 80 each.
        { delivery: { ...delivery, timeoutMs: 5000, leaseMs: 60_000, perDestinationConcurrency: 16, concurrency: 16, claimBatchSize: 100 } },
      );
      ferry = await startOnClock(config, clock);
      await ferry.send('/v1/batch', { batch: Array.from({ length: 100 }, (_, i) => ({ type: 'track', userId: `u${i}`, event: 'E' })) });
      await ferry.ferry.worker.tick();
      await slow.waitFor(16);
      const { pending, leased } = await pendingAndLeased(ferry, clock);
      assert.equal(pending.length, 300);
      assert.equal(leased.length, 96, '16 sending and 80 ready over the three destinations, not 80 more for each');
      assert.equal(slow.requests.length, 16);
    } finally {
      await slow.close();
    }
  });

  test('when slots are scarce, claim rounds take turns among destinations', async () => {
    const clock = new ManualClock();
    const urls = ['x', 'y', 'z'].map((p) => `${a.url}/${p}`);
    const config = testConfig(
      urls.map((u, i) => webhooksDestination(`d-${i}`, [u])),
      // One slot in all: each round starts exactly one job (a worker driven by hand starts
      // jobs only in its rounds, not when a slot frees).
      { delivery: { ...delivery, concurrency: 1, perDestinationConcurrency: 1, claimBatchSize: 1, timeoutMs: 1000, leaseMs: 3000 } },
    );
    ferry = await startOnClock(config, clock);
    await ferry.send('/v1/batch', { batch: Array.from({ length: 3 }, (_, i) => ({ type: 'track', userId: `u${i}`, event: 'E' })) });
    for (let round = 0; round < 3; round++) {
      await ferry.ferry.worker.tick();
      await ferry.settled();
    }
    assert.deepEqual(a.requests.map((r) => r.path).sort(), ['/x', '/y', '/z'], 'three rounds served three destinations');
  });
});
