import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Analytics, AnalyticsError, createFetchTransport, defaults, type ErrorEvent, type RetryEvent } from '@ferry/analytics';
import { Analytics as EdgeAnalytics } from '@ferry/analytics/edge';
import { within } from './support/deadline.js';
import { ManualClock } from './support/manual-clock.js';
import { SinkServer } from './support/sink-server.js';

describe('fetch transport', () => {
  let sink: SinkServer;
  const realFetch = globalThis.fetch;
  beforeEach(async () => {
    sink = await SinkServer.start();
  });
  afterEach(async () => {
    globalThis.fetch = realFetch;
    await sink.close();
  });

  it("is what transport: 'fetch' selects in Node: the batch goes through the global fetch", async () => {
    const fetched: string[] = [];
    globalThis.fetch = (input, init) => {
      fetched.push(String(input));
      return realFetch(input, init);
    };
    const client = new Analytics('wk', { endpoint: sink.url, transport: 'fetch' });
    client.track({ userId: 'u', event: 'E' });
    const result = await within(client.close(), 'close');
    assert.equal(result.delivered, 1);
    assert.deepEqual(fetched, [`${sink.url}/v1/batch`]);
    const seen = sink.requests[0]!;
    assert.equal(seen.method, 'POST');
    assert.equal(seen.headers['authorization'], `Basic ${btoa('wk:')}`);
    assert.equal(seen.headers['content-type'], 'application/json');
    assert.equal(sink.accepted[0]!['event'], 'E');
  });

  it('is the default of the edge entry, and gzips through CompressionStream there', async () => {
    const fetched: string[] = [];
    globalThis.fetch = (input, init) => {
      fetched.push(String(input));
      return realFetch(input, init);
    };
    const client = new EdgeAnalytics('wk', { endpoint: sink.url, gzip: true });
    const properties = { text: 'x'.repeat(5_000) };
    client.track({ userId: 'u', event: 'Big', properties });
    const result = await within(client.close(), 'close');
    assert.equal(result.delivered, 1);
    assert.equal(fetched.length, 1);
    const seen = sink.requests[0]!;
    assert.equal(seen.headers['content-encoding'], 'gzip');
    assert.ok(seen.rawBytes < seen.text.length / 10, `compressed ${seen.text.length} bytes to ${seen.rawBytes}`);
    assert.deepEqual(sink.accepted[0]!['properties'], properties);
  });

  it('aborts an attempt at requestTimeoutMs and retries it; the retry is delivered', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    sink.handler = (_r, i) => (i === 0 ? { after: held } : {});
    const clock = new ManualClock();
    const retries: RetryEvent[] = [];
    const client = new Analytics('wk', { endpoint: sink.url, transport: createFetchTransport(), clock, random: () => 0, requestTimeoutMs: 1_000 });
    client.on('retry', (e) => retries.push(e));
    client.track({ userId: 'u', event: 'E' });
    const flushed = client.flush();
    await sink.untilRequests(1);
    await clock.advanceThrough(1_000);
    await clock.advanceThrough(defaults.retryBaseDelayMs / 2);
    const result = await within(flushed, 'flush');
    release();
    assert.equal(result.delivered, 1);
    assert.equal(retries.length, 1);
    assert.match(retries[0]!.reason, /timed out after 1000 ms/);
    assert.equal(sink.accepted.length, 1);
    await client.close();
  });

  it("passes the status, Retry-After and body through: 429 waits the server's delay, 400 fails with the server's words", async () => {
    sink.handler = (_r, i) => (i === 0 ? { status: 429, headers: { 'retry-after': '3' } } : { status: 400, body: '{"code":"bad_batch"}' });
    const clock = new ManualClock();
    const retries: RetryEvent[] = [];
    const errors: ErrorEvent[] = [];
    const client = new Analytics('wk', { endpoint: sink.url, transport: 'fetch', clock });
    client.on('retry', (e) => retries.push(e));
    client.on('error', (e) => errors.push(e));
    client.track({ userId: 'u', event: 'E' });
    const flushed = client.flush();
    await clock.advanceThrough(3_000);
    const result = await within(flushed, 'flush');
    assert.deepEqual(
      retries.map((r) => [r.status, r.delayMs]),
      [[429, 3_000]],
    );
    assert.deepEqual(
      result.failed.map((f) => f.code),
      ['rejected_by_server'],
    );
    assert.equal(errors[0]!.error.status, 400);
    assert.match(errors[0]!.error.message, /bad_batch/);
    await client.close();
  });

  it('does not follow a redirect: the 307 is the answer and the batch is not re-posted elsewhere', async () => {
    sink.handler = (r) => (r.url === '/v1/batch' ? { status: 307, headers: { location: '/elsewhere' } } : {});
    const client = new Analytics('wk', { endpoint: sink.url, transport: 'fetch', clock: new ManualClock() });
    client.track({ userId: 'u', event: 'E' });
    const result = await within(client.close(), 'close');
    assert.deepEqual(
      result.failed.map((f) => f.code),
      ['rejected_by_server'],
    );
    assert.deepEqual(
      sink.requests.map((r) => r.url),
      ['/v1/batch'],
    );
  });

  it('refuses a fetch that is not a function and a transport that is neither an object nor "fetch"', () => {
    assert.throws(
      () => createFetchTransport({ fetch: 'no' as never }),
      (e: unknown) => e instanceof AnalyticsError && e.code === 'invalid_option',
    );
    assert.throws(() => new Analytics('wk', { transport: 'http' as never }), /transport object or "fetch"/);
  });
});
