/**
 * The circuit breaker per URL, end to end: a real receiver on loopback, a real Ferry whose
 * worker is driven by hand on a manual clock, on both stores (a hold hands its jobs back
 * through the store). What it must do: open after a run of failures or a high failure rate,
 * send nothing to an open URL (a destination of one URL is held, its jobs unattempted), one
 * probe after a cool-down that grows, a ramp after a successful probe, and with several URLs,
 * skip only the open one.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import type { FerryOptions } from '../../src/app.js';
import type { FerryEvents } from '../../src/events/catalogue.js';
import { CircuitBreakers } from '../../src/delivery/circuit-breaker.js';
import { ManualClock } from '../../src/util/clock.js';
import { capturedLogger } from '../helpers/captured-logger.js';
import { adminToken, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { startFerryOn, storeKinds, type StoreKind } from '../helpers/ferry-on-store.js';
import { parsePrometheus } from '../helpers/prometheus.js';
import { startReceiver, type Reply, type TestReceiver } from '../helpers/receiver.js';

const hour = 3_600_000;
/** One slot, so exchanges come one after another and the count sent before a circuit opens is exact. */
const delivery = {
  timeoutMs: 5000,
  leaseMs: 60_000,
  perDestinationConcurrency: 1,
  retry: { initialDelayMs: 1000, multiplier: 2, maxDelayMs: 60_000, jitter: 0, windowMs: 4 * hour, maxRetryAfterMs: 600_000 },
};

type BreakerEvent = { name: string; payload: any };

interface Setup {
  ferry: TestFerry;
  clock: ManualClock;
  receiver: TestReceiver;
  events: BreakerEvent[];
  lines: Record<string, any>[];
}

async function setup(
  t: TestContext,
  kind: StoreKind,
  reply: Reply | ((req: any) => Reply),
  destination: (url: string) => unknown,
  settings: Record<string, unknown> = delivery,
  options: Partial<FerryOptions> = {},
): Promise<Setup> {
  const receiver = await startReceiver(reply);
  const cleanups: (() => Promise<void>)[] = [];
  t.after(async () => {
    await receiver.close();
    for (const fn of cleanups.reverse()) await fn();
  });
  const clock = new ManualClock();
  const { logger, lines } = capturedLogger();
  const { server } = await startFerryOn(
    kind,
    testConfig([destination(receiver.url)], { delivery: settings }),
    { clock, deliver: false, logger, ...options },
    (fn) => cleanups.push(fn),
  );
  const events: BreakerEvent[] = [];
  for (const name of ['breaker:opened', 'breaker:half-open', 'breaker:closed'] as const)
    server.ferry.events.on(name, (payload: FerryEvents[typeof name]) => events.push({ name, payload }));
  return { ferry: server, clock, receiver, events, lines };
}

/**
 * Sends what is due until nothing more goes out. A worker driven by hand starts the jobs it
 * holds ready only at its next round (no loop runs to start them when a slot frees), and with
 * one slot `runUntilIdle` may end while some wait: so rounds go on until one claims nothing
 * and sends nothing. Bounded: 500 rounds.
 */
async function drain(s: { ferry: TestFerry; receiver: TestReceiver }): Promise<void> {
  for (let round = 0; round < 500; round++) {
    const before = s.receiver.requests.length;
    const claimed = await s.ferry.ferry.worker.tick();
    await s.ferry.settled();
    if (claimed === 0 && s.receiver.requests.length === before) return;
  }
  throw new Error('the worker kept sending for 500 rounds');
}

const track = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'track', userId: 'u', event: 'E', messageId: `m-${i}` }));

async function pending(ferry: TestFerry): Promise<{ id: number; attemptCount: number; nextAttemptAt: string }[]> {
  return (await ferry.admin('GET', '/deliveries?status=pending&limit=1000')).json.deliveries;
}

async function stats(ferry: TestFerry, id = 'hooks') {
  return (await ferry.admin('GET', `/destinations/${id}/stats`)).json;
}

for (const kind of storeKinds) {
  describe(`circuit breaker on ${kind}`, () => {
    test('CB01 five failures in a row open the URL: the rest are not attempted, and the change is an event, a log line, metrics and stats', async (t) => {
      const s = await setup(t, kind, { status: 503 }, (url) => webhooksDestination('hooks', [`${url}/hooks`]));
      assert.equal((await s.ferry.send('/v1/batch', { batch: track(20) })).status, 200);
      await drain(s);

      assert.equal(s.receiver.requests.length, 5, 'five requests, then nothing');
      const rows = await pending(s.ferry);
      assert.equal(rows.length, 20);
      assert.equal(rows.filter((d) => d.attemptCount === 1).length, 5);
      assert.equal(rows.filter((d) => d.attemptCount === 0).length, 15, 'held jobs are not attempted, so their windows have not started');

      const url = `${s.receiver.url}/hooks`;
      assert.deepEqual(s.events, [
        {
          name: 'breaker:opened',
          payload: { destinationId: 'hooks', url, reason: 'consecutive_failures', failures: 5, cooldownMs: 30_000, probeAtMs: s.clock.now() + 30_000 },
        },
      ]);
      const line = s.lines.find((l) => l.msg === 'circuit breaker opened; nothing is sent to this URL until its probe');
      assert.ok(line, 'logged');
      assert.deepEqual([line.level, line.destinationId, line.url, line.reason], [40, 'hooks', url, 'consecutive_failures']);

      const res = await fetch(`${s.ferry.url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } });
      const scrape = parsePrometheus(await res.text());
      assert.equal(scrape.value('ferry_circuit_state', { destination: 'hooks', url }), 2);
      assert.equal(scrape.value('ferry_circuit_transitions_total', { destination: 'hooks', url, state: 'open' }), 1);

      const { circuits } = await stats(s.ferry);
      assert.deepEqual(circuits, [
        {
          url,
          state: 'open',
          since: new Date(s.clock.now()).toISOString(),
          consecutiveFailures: 5,
          cooldownMs: 30_000,
          probeAt: new Date(s.clock.now() + 30_000).toISOString(),
          concurrencyLimit: null,
        },
      ]);

      // The retries of the five fall due meanwhile, and still nothing is sent before the probe.
      s.clock.advance(29_999);
      await drain(s);
      assert.equal(s.receiver.requests.length, 5);
    });

    test('CB02 one probe after the cool-down; a failed one doubles it; a successful one closes the URL and the backlog ramps up 1, 2, 4', async (t) => {
      let answer: Reply = { status: 503 };
      const s = await setup(
        t,
        kind,
        () => answer,
        (url) => webhooksDestination('hooks', [url]),
        { ...delivery, perDestinationConcurrency: 8, timeoutMs: 10_000, leaseMs: 120_000 },
      );
      await s.ferry.send('/v1/batch', { batch: track(40) });
      // Eight at once: all fail, the fifth result opens the circuit, the rest are held.
      await drain(s);
      const opened = s.receiver.requests.length;
      assert.ok(opened >= 5 && opened <= 8, `between 5 and 8 sent before the circuit opened (got ${opened})`);

      s.clock.advance(30_000);
      await drain(s);
      assert.equal(s.receiver.requests.length, opened + 1, 'one probe');
      assert.deepEqual(
        s.events.slice(1).map((e) => [e.name, e.payload.reason, e.payload.cooldownMs]),
        [
          ['breaker:half-open', undefined, undefined],
          ['breaker:opened', 'probe_failed', 60_000],
        ],
      );

      s.clock.advance(59_999);
      await drain(s);
      assert.equal(s.receiver.requests.length, opened + 1, 'nothing before the longer cool-down ends');

      // The receiver is back but slow: exchanges stay in flight, which shows the ramp.
      answer = 'hang';
      s.clock.advance(1);
      await s.ferry.ferry.worker.tick();
      await s.receiver.waitFor(opened + 2);
      assert.equal(s.receiver.requests.length, opened + 2, 'one probe');
      s.receiver.reply({ status: 200 });
      answer = { status: 200 };
      await s.receiver.close();
      await s.ferry.settled();
      // The hanging probe was cut when its receiver closed: a failure, so open again for 120 s.
      assert.equal(s.events.at(-1)!.payload.cooldownMs, 120_000);

      const again = await startReceiver({ status: 200 });
      t.after(() => again.close());
      await s.ferry.admin('PATCH', '/destinations/hooks', { settings: { webhooks: [{ url: again.url }] } });
      // A changed URL is a new circuit: closed, sent to at once.
      s.clock.advance(hour);
      await drain({ ferry: s.ferry, receiver: again });
      assert.equal((await pending(s.ferry)).length, 0, 'every event delivered to the new URL');
      assert.deepEqual(
        (await stats(s.ferry)).circuits.map((c: any) => [c.url, c.state]),
        [[again.url, 'closed']],
      );
    });

    test('CB03 after a successful probe the concurrency grows 1, 2, 4 a ramp step apart, then the circuit is fully closed', async (t) => {
      let answer: Reply = { status: 503 };
      const s = await setup(
        t,
        kind,
        () => answer,
        (url) => webhooksDestination('hooks', [url]),
        { ...delivery, perDestinationConcurrency: 4, timeoutMs: 20_000, leaseMs: 120_000 },
      );
      await s.ferry.send('/v1/batch', { batch: track(30) });
      await drain(s);
      const opened = s.receiver.requests.length;
      s.clock.advance(30_000);
      answer = { status: 200 };
      await drain(s);
      assert.equal(s.events.at(-1)!.name, 'breaker:closed');
      assert.equal(s.events.at(-1)!.payload.reason, 'probe_succeeded');
      assert.equal(s.events.at(-1)!.payload.openForMs, 30_000);
      // The probe and the jobs sent during the idle: one at a time (the ramp's first step).
      const afterProbe = s.receiver.requests.length;
      assert.ok(afterProbe > opened + 1, 'the backlog goes on at once, one at a time');
      assert.equal((await stats(s.ferry)).circuits[0].concurrencyLimit, 1);

      // Hanging answers keep exchanges in flight: the number in flight is the ramp's limit.
      answer = 'hang';
      await s.ferry.send('/v1/batch', { batch: track(30).map((m) => ({ ...m, messageId: `n-${m.messageId}` })) });
      await s.ferry.ferry.worker.tick();
      await s.receiver.waitFor(afterProbe + 1);
      assert.equal(s.receiver.requests.length, afterProbe + 1, 'one in flight in the first step');
      s.clock.advance(1000);
      await s.ferry.ferry.worker.tick();
      await s.receiver.waitFor(afterProbe + 2);
      assert.equal(s.receiver.requests.length, afterProbe + 2, 'two in flight in the second');
      s.clock.advance(1000);
      await s.ferry.ferry.worker.tick();
      await s.receiver.waitFor(afterProbe + 4);
      assert.equal(s.receiver.requests.length, afterProbe + 4, 'four in flight in the third: full concurrency');
      assert.equal((await stats(s.ferry)).circuits[0].concurrencyLimit, null, 'the ramp is over');
      await s.receiver.close();
      await s.ferry.settled();
    });

    test('CB04 with two URLs, an open one is skipped within the attempt (circuit_open) while the other is served', async (t) => {
      const s = await setup(
        t,
        kind,
        (req) => (req.path === '/down' ? { status: 500 } : { status: 200 }),
        (url) => webhooksDestination('hooks', [`${url}/down`, `${url}/up`]),
      );
      await s.ferry.send('/v1/batch', { batch: track(8) });
      await drain(s);
      const down = s.receiver.requests.filter((r) => r.path === '/down').length;
      const up = s.receiver.requests.filter((r) => r.path === '/up').length;
      assert.deepEqual([down, up], [5, 8], 'the open URL got five, the other every event');
      assert.equal((await pending(s.ferry)).length, 0, 'every event succeeded through the other URL');
      const ids = ((await s.ferry.admin('GET', '/deliveries?limit=100')).json.deliveries as { id: number }[]).map((d) => d.id);
      const last = { id: Math.max(...ids) };
      const detail = (await s.ferry.admin('GET', `/deliveries/${last.id}`)).json;
      assert.deepEqual(
        detail.attempts.map((a: any) => [a.url.replace(s.receiver.url, ''), a.statusCode, a.errorClass, a.latencyMs]),
        [
          ['/down', null, 'circuit_open', 0],
          ['/up', 200, null, detail.attempts[1].latencyMs],
        ],
      );
      assert.deepEqual(
        (await stats(s.ferry)).circuits.map((c: any) => [c.url.replace(s.receiver.url, ''), c.state]),
        [
          ['/down', 'open'],
          ['/up', 'closed'],
        ],
      );
    });
  });
}

describe('circuit breaker decisions', () => {
  test('CB05 a failure rate of one half over the window, once 20 exchanges were made, opens a URL no run of five fails', async (t) => {
    let n = 0;
    const s = await setup(
      t,
      'sqlite',
      () => (n++ % 2 === 0 ? { status: 503 } : { status: 200 }),
      (url) => webhooksDestination('hooks', [url]),
    );
    await s.ferry.send('/v1/batch', { batch: track(30) });
    await drain(s);
    // Failures at exchanges 1, 3 ... 21: the 19th is the 10th of 19 (too few), the 21st the 11th of 21.
    assert.equal(s.receiver.requests.length, 21);
    assert.deepEqual(
      s.events.map((e) => [e.name, e.payload.reason, e.payload.failures]),
      [['breaker:opened', 'failure_rate', 1]],
    );
  });

  test('CB06 a 4xx the destination does not retry shows the receiver is there: it never opens the circuit', async (t) => {
    const s = await setup(t, 'sqlite', { status: 400 }, (url) => webhooksDestination('hooks', [url]));
    await s.ferry.send('/v1/batch', { batch: track(10) });
    await drain(s);
    assert.equal(s.receiver.requests.length, 10);
    assert.deepEqual(s.events, []);
  });

  test('CB07 with the breaker off every event is attempted', async (t) => {
    const s = await setup(t, 'sqlite', { status: 503 }, (url) => webhooksDestination('hooks', [url], { circuitBreaker: { enabled: false } }));
    await s.ferry.send('/v1/batch', { batch: track(10) });
    await drain(s);
    assert.equal(s.receiver.requests.length, 10);
    assert.deepEqual(s.events, []);
    assert.deepEqual((await stats(s.ferry)).circuits, []);
  });

  test('CB08 thresholds are per destination: failures 2 and a 5 s cool-down', async (t) => {
    const s = await setup(t, 'sqlite', { status: 503 }, (url) => webhooksDestination('hooks', [url], { circuitBreaker: { failures: 2, cooldownMs: 5000 } }));
    await s.ferry.send('/v1/batch', { batch: track(10) });
    await drain(s);
    assert.equal(s.receiver.requests.length, 2);
    assert.equal(s.events[0]!.payload.probeAtMs, s.clock.now() + 5000);
  });
});

test("CB09 a URL ramping up after its recovery is waited for, not skipped beside a healthy one (its events would end on the other URL's 2xx)", () => {
  const clock = new ManualClock();
  const urls = ['https://a.example.com/in', 'https://b.example.com/in'];
  const destination = webhooksDestination('two', urls, { circuitBreaker: { failures: 1, cooldownMs: 1000, rampStepMs: 1000 } });
  const breakers = new CircuitBreakers({ clock, targetsOf: () => urls, perDestinationConcurrency: 8, emit: () => {} });
  const failure = { url: urls[0]!, startedAtMs: 0, latencyMs: 1, statusCode: 503 };
  const success = { url: urls[0]!, startedAtMs: 0, latencyMs: 1, statusCode: 200 };
  // A fails once: open; after its cool-down its probe succeeds: closed, ramping from 1.
  assert.equal(breakers.admit(destination, urls[0]!), 'send');
  breakers.record(destination, urls[0]!, 'send', failure);
  clock.advance(1000);
  assert.equal(breakers.admit(destination, urls[0]!), 'probe');
  breakers.record(destination, urls[0]!, 'probe', success);
  // One exchange in flight to A fills its ramp of 1: no send may start, though B has room.
  assert.equal(breakers.admit(destination, urls[0]!), 'send');
  assert.equal(breakers.mayStart(destination, clock.now()), false);
  // Had one started anyway, A is sent to, over the ramp, never skipped.
  assert.equal(breakers.admit(destination, urls[0]!), 'send');
  breakers.record(destination, urls[0]!, 'send', success);
  breakers.record(destination, urls[0]!, 'send', success);
  assert.equal(breakers.mayStart(destination, clock.now()), true);
});
