import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Analytics } from '@ferry/analytics';
import { ManualClock, tick } from './support/manual-clock.js';
import { countIds, SinkServer } from './support/sink-server.js';

describe('batching', () => {
  let sink: SinkServer;
  beforeEach(async () => {
    sink = await SinkServer.start();
  });
  afterEach(() => sink.close());

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

  it('accepts size as the spec name of flushAt, and flushAt 1 sends every call at once', async () => {
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, size: 1, clock });
    client.track({ userId: 'u', event: 'first' });
    await sink.untilAccepted(1);
    client.track({ userId: 'u', event: 'second' });
    await sink.untilAccepted(2);
    assert.deepEqual(
      sink.requests.map((r) => r.json.batch.length),
      [1, 1],
    );
    await client.close();
  });

  it('sends a partial batch flushAfter ms after the first queued message (injected clock)', async () => {
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 100, flushAfter: 5_000, clock });
    client.track({ userId: 'u', event: 'A' });
    clock.advance(1_000);
    client.track({ userId: 'u', event: 'B' });
    clock.advance(3_999);
    await tick();
    assert.equal(client.stats.queued, 2, 'nothing sent before the interval');
    clock.advance(1);
    assert.equal((await client.flush()).delivered, 2);
    assert.equal(sink.requests.length, 1);
    // The interval starts again with the next message, not on a fixed tick.
    client.track({ userId: 'u', event: 'C' });
    assert.deepEqual(clock.pendingDelays(), [5_000]);
    clock.advance(5_000);
    await sink.untilAccepted(3);
    await client.close();
    assert.deepEqual(clock.pendingDelays(), [], 'close leaves no timer behind');
  });

  it('splits a flush into requests of at most 500 KB, each message once', async () => {
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 1_000 });
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) ids.push(client.track({ userId: 'u', event: 'Big', properties: { pad: 'x'.repeat(20_000) } }));
    const result = await client.flush();
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

  it('coalesces a burst into few large requests with a bounded number in flight', async () => {
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
    for (let i = 0; i < 5_000; i++) client.track({ userId: `u${i}`, event: 'Burst' });
    const done = client.flush();
    // Release answers one by one until everything is in; the sink never sees more than 2 open.
    for (;;) {
      await sink.until(() => release.length > 0 || sink.accepted.length >= 5_000);
      if (sink.accepted.length >= 5_000) break;
      release.shift()!();
    }
    const result = await done;
    assert.equal(result.delivered, 5_000);
    assert.ok(maxOpen <= 2, `saw ${maxOpen} requests open at once`);
    assert.ok(sink.requests.length <= 10, `5,000 messages in ${sink.requests.length} requests`);
    await client.close();
  });

  it('gzips request bodies when asked', async () => {
    const client = new Analytics('wk', { endpoint: sink.url, gzip: true });
    client.track({ userId: 'u', event: 'Zipped', properties: { pad: 'y'.repeat(5_000) } });
    await client.close();
    const req = sink.requests[0]!;
    assert.equal(req.headers['content-encoding'], 'gzip');
    assert.ok(req.rawBytes < 1_000, `a 5 KB body of one letter compresses, got ${req.rawBytes}`);
    assert.equal(req.json.batch[0]!['event'], 'Zipped');
  });
});
