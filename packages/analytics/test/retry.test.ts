import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Analytics, type AnalyticsError, classifyStatus, defaults, parseRetryAfter, type RetryEvent, retryDelayMs, type Transport } from '@ferry/analytics';
import { within } from './support/deadline.js';
import { ManualClock } from './support/manual-clock.js';
import { SinkServer } from './support/sink-server.js';

// Two retries with random() fixed at 0: the first waits 50 ms, the second 100 ms, on the
// injected clock (the schedule itself is tested as data below).
const twoRetries = { retryBaseDelayMs: 100, retryMaxDelayMs: 10_000, maxRetries: 2, random: () => 0 };
const retryDelays = [50, 100];

describe('retry policy (data)', () => {
  const statusCases: Array<[number, 'success' | 'retry' | 'fail']> = [
    [200, 'success'],
    [202, 'success'],
    [204, 'success'],
    [301, 'fail'],
    [400, 'fail'],
    [401, 'fail'],
    [403, 'fail'],
    [404, 'fail'],
    [413, 'fail'],
    [422, 'fail'],
    [408, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [502, 'retry'],
    [503, 'retry'],
    [504, 'retry'],
  ];
  for (const [status, verdict] of statusCases) {
    it(`HTTP ${status} -> ${verdict}`, () => assert.equal(classifyStatus(status), verdict));
  }

  it('parses Retry-After as seconds or an HTTP date', () => {
    const now = Date.UTC(2024, 0, 1);
    assert.equal(parseRetryAfter(undefined, now), undefined);
    assert.equal(parseRetryAfter('3', now), 3_000);
    assert.equal(parseRetryAfter('0.5', now), 500);
    assert.equal(parseRetryAfter(new Date(now + 7_000).toUTCString(), now), 7_000);
    assert.equal(parseRetryAfter(new Date(now - 7_000).toUTCString(), now), 0);
    assert.equal(parseRetryAfter('soon', now), undefined);
  });

  it('backs off exponentially with equal jitter, capped, and honours a capped Retry-After', () => {
    const s = { maxRetries: 10, retryBaseDelayMs: 100, retryMaxDelayMs: 10_000, retryAfterMaxMs: 60_000 };
    const rows: Array<[number, number, number]> = [
      // retry, delay with random()=0, delay with random()=1
      [1, 50, 100],
      [2, 100, 200],
      [3, 200, 400],
      [7, 3_200, 6_400],
      [8, 5_000, 10_000],
      [20, 5_000, 10_000],
    ];
    for (const [retry, low, high] of rows) {
      assert.equal(
        retryDelayMs(retry, s, () => 0, undefined),
        low,
        `retry ${retry} low`,
      );
      assert.equal(
        retryDelayMs(retry, s, () => 1, undefined),
        high,
        `retry ${retry} high`,
      );
    }
    assert.equal(
      retryDelayMs(1, s, () => 0.5, 30_000),
      30_000,
    );
    assert.equal(
      retryDelayMs(1, s, () => 0.5, 600_000),
      60_000,
    );
  });
});

describe('retries against a server', () => {
  let sink: SinkServer;
  beforeEach(async () => {
    sink = await SinkServer.start();
  });
  afterEach(() => sink.close());

  const cases: Array<{ status: number; requests: number; code?: string }> = [
    { status: 500, requests: 3, code: 'retries_exhausted' },
    { status: 503, requests: 3, code: 'retries_exhausted' },
    { status: 408, requests: 3, code: 'retries_exhausted' },
    { status: 429, requests: 3, code: 'retries_exhausted' },
    { status: 400, requests: 1, code: 'rejected_by_server' },
    { status: 401, requests: 1, code: 'rejected_by_server' },
    { status: 413, requests: 1, code: 'rejected_by_server' },
  ];
  for (const c of cases) {
    it(`HTTP ${c.status}: ${c.requests} request(s), then ${c.code}`, async () => {
      sink.handler = () => ({ status: c.status });
      const clock = new ManualClock();
      const client = new Analytics('wk', { endpoint: sink.url, clock, ...twoRetries });
      const errors: AnalyticsError[] = [];
      const retries: RetryEvent[] = [];
      client.on('error', (e) => errors.push(e.error)).on('retry', (e) => retries.push(e));
      let callbackError: AnalyticsError | undefined;
      const id = client.track({ userId: 'u', event: 'E' }, (err) => {
        callbackError = err;
      });
      const closing = client.close();
      for (const delayMs of retryDelays.slice(0, c.requests - 1)) await clock.advanceThrough(delayMs);
      const result = await within(closing, 'close');
      assert.equal(sink.requests.length, c.requests);
      assert.deepEqual(
        retries.map((r) => [r.retry, r.delayMs, r.status]),
        retryDelays.slice(0, c.requests - 1).map((delayMs, i) => [i + 1, delayMs, c.status]),
      );
      assert.deepEqual(result.failed, [{ messageId: id, code: c.code }]);
      assert.equal(callbackError?.code, c.code);
      assert.equal(callbackError?.status, c.status);
      assert.equal(errors.length, 1);
      assert.equal(client.stats.failed, 1);
    });
  }

  it('recovers after transient failures, resending the same messageIds', async () => {
    // The first drop hits the kept connection before any byte of the answer, so the transport
    // itself sends once more on a new connection; the second drop is the client's to retry.
    const answers = [{ status: 503 }, { destroy: true }, { destroy: true }, { status: 200 }];
    sink.handler = (_req, i) => answers[i];
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, clock, ...twoRetries });
    const ids = [client.track({ userId: 'u', event: 'A' }), client.track({ userId: 'u', event: 'B' })];
    const closing = client.close();
    for (const delayMs of retryDelays) await clock.advanceThrough(delayMs);
    const result = await within(closing, 'close');
    assert.equal(result.delivered, 2);
    assert.equal(sink.requests.length, 4);
    for (const r of sink.requests)
      assert.deepEqual(
        r.json.batch.map((m) => m['messageId']),
        ids,
      );
  });

  it('retries an attempt that times out', async () => {
    let hang!: () => void;
    const held = new Promise<void>((r) => (hang = r));
    sink.handler = (_req, i) => (i === 0 ? { after: held } : {});
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, clock, requestTimeoutMs: 1_000, ...twoRetries });
    const retries: RetryEvent[] = [];
    client.on('retry', (e) => retries.push(e));
    client.track({ userId: 'u', event: 'Slow' });
    const closing = client.close();
    await sink.untilRequests(1);
    clock.advance(999);
    assert.equal(retries.length, 0, 'no timeout before requestTimeoutMs');
    clock.advance(1);
    await clock.advanceThrough(retryDelays[0]!);
    const result = await within(closing, 'close');
    hang();
    assert.equal(result.delivered, 1);
    assert.equal(sink.requests.length, 2);
    assert.equal(retries.length, 1);
    assert.match(retries[0]!.reason, /timed out after 1000 ms/);
  });

  it('aborts the signal an injected transport was given when the attempt times out', async () => {
    const signals: AbortSignal[] = [];
    const transport: Transport = {
      send(req) {
        signals.push(req.signal);
        if (signals.length > 1) return Promise.resolve({ status: 200, headers: {}, body: '{"success":true}' });
        return new Promise((_, reject) => req.signal.addEventListener('abort', () => reject(new Error('aborted'))));
      },
    };
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, transport, clock, requestTimeoutMs: 1_000, ...twoRetries });
    client.track({ userId: 'u', event: 'E' });
    const closing = client.close();
    await clock.advanceThrough(1_000);
    await clock.advanceThrough(retryDelays[0]!);
    const result = await within(closing, 'close');
    assert.equal(result.delivered, 1);
    assert.deepEqual(
      signals.map((s) => s.aborted),
      [true, false],
    );
  });

  it('waits what Retry-After says (capped), not the backoff schedule', async () => {
    const clock = new ManualClock();
    sink.handler = (_req, i) =>
      i === 0 ? { status: 429, headers: { 'retry-after': '7' } } : i === 1 ? { status: 503, headers: { 'retry-after': '86400' } } : {};
    const client = new Analytics('wk', { endpoint: sink.url, clock, random: () => 0.5 });
    const delays: number[] = [];
    client.on('retry', (e) => delays.push(e.delayMs));
    client.track({ userId: 'u', event: 'E' });
    const done = client.flush();
    await clock.advanceThrough(7_000);
    await clock.advanceThrough(defaults.retryAfterMaxMs);
    const result = await within(done, 'the flush');
    assert.equal(result.delivered, 1);
    assert.deepEqual(delays, [7_000, defaults.retryAfterMaxMs]);
    await within(client.close(), 'close');
  });

  it('reports messages the server refused inside an accepted batch', async () => {
    sink.handler = () => ({
      body: JSON.stringify({ success: true, rejected: [{ index: 1, code: 'invalid_field', message: 'bad' }] }),
    });
    const client = new Analytics('wk', { endpoint: sink.url, clock: new ManualClock() });
    const outcomes: Array<string | undefined> = [];
    const cb = (err: AnalyticsError | undefined) => outcomes.push(err?.code);
    client.track({ userId: 'u', event: 'A' }, cb);
    const refused = client.track({ userId: 'u', event: 'B' }, cb);
    const result = await within(client.close(), 'close');
    assert.deepEqual(outcomes, [undefined, 'message_rejected']);
    assert.equal(result.delivered, 1);
    assert.deepEqual(result.failed, [{ messageId: refused, code: 'message_rejected' }]);
  });
});
