import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Analytics, defaults } from '@ferry/analytics';
import { within } from './support/deadline.js';
import { ManualClock, tick } from './support/manual-clock.js';
import { countIds, SinkServer } from './support/sink-server.js';

describe('batching', () => {
  let sink: SinkServer;
  beforeEach(async () => {
    sink = await SinkServer.start();
  });
  afterEach(() => sink.close());

  const batchSizes = () => sink.requests.map((r) => r.json.batch.length);
  // Requests may arrive in any order when several are in flight; ordered by their first message.
  const eventsByRequest = () =>
    sink.requests
      .map((r) => r.json.batch.map((m) => Number(String(m['event']).slice(1))))
      .sort((a, b) => a[0]! - b[0]!)
      .flat();
  const range = (n: number) => Array.from({ length: n }, (_, i) => i);

  it('makes no request per call: sends when flushAt messages are queued', async () => {
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 5, clock });
    for (let i = 0; i < 4; i++) client.track({ userId: 'u', event: `E${i}` });
    await tick();
    await tick();
    assert.equal(client.stats.queued, 4);
    assert.equal(client.stats.inFlight, 0);
    assert.equal(sink.requests.length, 0);
    client.track({ userId: 'u', event: 'E4' });
    await sink.untilAccepted(5);
    assert.equal(sink.requests.length, 1);
    assert.deepEqual(
      sink.requests[0]!.json.batch.map((m) => m['event']),
      ['E0', 'E1', 'E2', 'E3', 'E4'],
    );
    await client.close();
  });

  it('sends a burst of 45 synchronous calls as batches of 20 and 20, and the last 5 at the flush period', async () => {
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, clock });
    for (let i = 0; i < 45; i++) client.track({ userId: 'u', event: `E${i}` });
    await sink.untilAccepted(40);
    assert.deepEqual(batchSizes(), [20, 20]);
    assert.equal(client.stats.queued, 5);
    clock.advance(defaults.flushAfterMs);
    await sink.untilAccepted(45);
    assert.deepEqual(batchSizes(), [20, 20, 5]);
    assert.deepEqual(eventsByRequest(), range(45), 'each batch takes the oldest messages, in call order');
    await client.close();
  });

  it("sends each of 5 synchronous calls in its own request with flushAt 1 (given as the spec's size)", async () => {
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, size: 1, clock });
    for (let i = 0; i < 5; i++) client.track({ userId: 'u', event: `E${i}` });
    await sink.untilAccepted(5);
    assert.deepEqual(batchSizes(), [1, 1, 1, 1, 1]);
    assert.deepEqual(eventsByRequest(), range(5));
    await client.close();
  });

  it('keeps batches at flushAt when flush() drains a long queue', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    sink.handler = (_req, i) => (i === 0 ? { after: held } : {});
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 20, maxInFlight: 1, clock });
    for (let i = 0; i < 110; i++) client.track({ userId: 'u', event: `E${i}` });
    await sink.untilRequests(1);
    assert.equal(client.stats.queued, 90, 'one batch in flight, the rest queued');
    const flushed = client.flush();
    release();
    const result = await within(flushed, 'the flush');
    assert.equal(result.delivered, 110);
    assert.deepEqual(batchSizes(), [20, 20, 20, 20, 20, 10]);
    assert.deepEqual(eventsByRequest(), range(110));
    await client.close();
  });

  it('flushes flushAfter ms after the last flush, not after the next message; an idle client sets no timer', async () => {
    const clock = new ManualClock();
    const t0 = clock.now();
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 100, flushAfter: 5_000, clock });
    const sentAt = () => sink.requests.map((r) => Date.parse(r.json.sentAt!) - t0);
    clock.advance(1_000);
    client.track({ userId: 'u', event: 'A' });
    clock.advance(3_999);
    await tick();
    assert.equal(sink.requests.length, 0, 'nothing before the first period ends');
    clock.advance(1);
    await sink.untilAccepted(1);
    // Queued 4 s into the second period, B leaves with that period's flush, 1 s later.
    clock.advance(4_000);
    client.track({ userId: 'u', event: 'B' });
    clock.advance(999);
    await tick();
    assert.equal(sink.requests.length, 1, 'nothing before the second period ends');
    clock.advance(1);
    await sink.untilAccepted(2);
    assert.deepEqual(sentAt(), [5_000, 10_000]);
    await within(client.flush(), 'the in-flight batch');
    assert.deepEqual(clock.pendingDelays(), [], 'nothing queued: no timer');
    // More than a period since the last flush: the next message is already due.
    clock.advance(12_000);
    client.track({ userId: 'u', event: 'C' });
    assert.deepEqual(clock.pendingDelays(), [0]);
    clock.advance(0);
    await sink.untilAccepted(3);
    assert.deepEqual(sentAt(), [5_000, 10_000, 22_000]);
    await client.close();
    assert.deepEqual(clock.pendingDelays(), [], 'close leaves no timer behind');
  });

  it('starts the flush period again when flushAt triggers a flush', async () => {
    const clock = new ManualClock();
    const t0 = clock.now();
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 3, flushAfter: 5_000, clock });
    const sentAt = () => sink.requests.map((r) => Date.parse(r.json.sentAt!) - t0);
    client.track({ userId: 'u', event: 'E0' });
    clock.advance(2_000);
    for (const event of ['E1', 'E2', 'E3']) client.track({ userId: 'u', event });
    await sink.untilAccepted(3);
    clock.advance(3_000);
    await tick();
    assert.equal(sink.requests.length, 1, 'E3 waits a whole period after the flush at 2 s');
    clock.advance(2_000);
    await sink.untilAccepted(4);
    assert.deepEqual(sentAt(), [2_000, 7_000]);
    assert.deepEqual(batchSizes(), [3, 1]);
    await client.close();
  });

  it('splits a flush into requests of at most 500 KB, each message once', async () => {
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 1_000 });
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) ids.push(client.track({ userId: 'u', event: 'Big', properties: { pad: 'x'.repeat(20_000) } }));
    const result = await within(client.flush(), 'the flush');
    assert.equal(result.status, 'complete');
    assert.equal(result.delivered, 60);
    assert.ok(sink.requests.length >= 3, `60 x 20 KB needs at least 3 requests, saw ${sink.requests.length}`);
    for (const r of sink.requests) assert.ok(r.rawBytes <= 500_000, `a request of ${r.rawBytes} bytes`);
    // Full batches really are full: a split happens only when the next message would not fit.
    assert.ok(Math.max(...sink.requests.map((r) => r.rawBytes)) > 480_000);
    assert.deepEqual([...countIds(sink.accepted).keys()].sort(), ids.sort());
    assert.ok([...countIds(sink.accepted).values()].every((n) => n === 1));
    await client.close();
  });

  it('sends a burst in batches of flushAt with exactly maxInFlight requests open at once', async () => {
    let open = 0;
    let maxOpen = 0;
    const release: Array<() => void> = [];
    sink.handler = () => {
      open++;
      maxOpen = Math.max(maxOpen, open);
      return {
        after: new Promise<void>((resolve) => release.push(resolve)).then(() => {
          open--;
        }),
      };
    };
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 20, maxInFlight: 2 });
    for (let i = 0; i < 5_000; i++) client.track({ userId: `u${i}`, event: `E${i}` });
    const done = client.flush();
    // 250 requests; each answer waits until two are open (one for the last), so a client that
    // sent one at a time, or more than two, would show here.
    for (let answered = 0; answered < 250; answered++) {
      const expected = Math.min(2, 250 - answered);
      await sink.until(() => release.length >= expected, `${expected} open requests after ${answered} answers`);
      release.shift()!();
    }
    const result = await within(done, 'the flush');
    assert.equal(result.delivered, 5_000);
    assert.equal(maxOpen, 2);
    assert.equal(sink.requests.length, 250);
    assert.ok(batchSizes().every((n) => n === 20));
    assert.deepEqual(eventsByRequest(), range(5_000));
    await client.close();
  });

  it('gzips request bodies when asked', async () => {
    const client = new Analytics('wk', { endpoint: sink.url, gzip: true });
    client.track({ userId: 'u', event: 'Zipped', properties: { pad: 'y'.repeat(5_000) } });
    await within(client.close(), 'close');
    const req = sink.requests[0]!;
    assert.equal(req.headers['content-encoding'], 'gzip');
    assert.ok(req.rawBytes < 1_000, `a 5 KB body of one letter compresses, got ${req.rawBytes}`);
    assert.equal(req.json.batch[0]!['event'], 'Zipped');
  });
});
