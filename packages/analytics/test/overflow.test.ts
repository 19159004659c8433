import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Analytics, type AnalyticsError, type DropEvent } from '@ferry/analytics';
import { within } from './support/deadline.js';
import { ManualClock } from './support/manual-clock.js';
import { SinkServer } from './support/sink-server.js';

describe('bounded queue', () => {
  let sink: SinkServer;
  beforeEach(async () => {
    sink = await SinkServer.start();
  });
  afterEach(() => sink.close());

  it('drop-oldest (default): evicts the oldest, counts it and reports it through drop and its callback', async () => {
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 100, maxQueueMessages: 3, clock });
    const drops: DropEvent[] = [];
    client.on('drop', (e) => drops.push(e));
    const outcome = new Map<string, string | undefined>();
    const cb = (err: AnalyticsError | undefined, id: string) => outcome.set(id, err?.code);
    const ids = [1, 2, 3, 4, 5].map((n) => client.track({ userId: 'u', event: `E${n}` }, cb));
    assert.deepEqual(
      drops.map((d) => [d.code, d.messageIds, d.totalDropped]),
      [
        ['queue_overflow', [ids[0]], 1],
        ['queue_overflow', [ids[1]], 2],
      ],
    );
    assert.equal(outcome.get(ids[0]!), 'queue_overflow');
    assert.equal(client.stats.dropped, 2);
    await within(client.close(), 'close');
    assert.deepEqual(
      sink.accepted.map((m) => m['event']),
      ['E3', 'E4', 'E5'],
    );
    assert.equal(outcome.get(ids[4]!), undefined);
    assert.equal(outcome.size, 5, 'every call got an outcome');
  });

  it('reject: refuses the new call with queue_full, keeps the queued ones', async () => {
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 100, maxQueueMessages: 2, overflow: 'reject', clock });
    const drops: DropEvent[] = [];
    client.on('drop', (e) => drops.push(e));
    client.track({ userId: 'u', event: 'A' });
    client.track({ userId: 'u', event: 'B' });
    assert.throws(() => client.track({ userId: 'u', event: 'C' }), { name: 'AnalyticsError', code: 'queue_full' });
    assert.equal(drops.length, 1);
    assert.equal(drops[0]!.code, 'queue_full');
    await within(client.close(), 'close');
    assert.deepEqual(
      sink.accepted.map((m) => m['event']),
      ['A', 'B'],
    );
  });

  it('bounds the queued bytes too', async () => {
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 100, maxQueueBytes: 5_000, clock });
    client.on('drop', () => {});
    for (let i = 0; i < 10; i++) client.track({ userId: 'u', event: `E${i}`, properties: { pad: 'x'.repeat(900) } });
    assert.ok(client.stats.queued < 10);
    assert.equal(client.stats.queued + client.stats.dropped, 10);
    const queued = client.stats.queued;
    const result = await within(client.close(), 'close');
    assert.equal(result.delivered, queued);
    assert.equal(sink.accepted.length, 10 - client.stats.dropped);
    assert.equal(sink.accepted.at(-1)!['event'], 'E9', 'the newest survive');
  });
});
