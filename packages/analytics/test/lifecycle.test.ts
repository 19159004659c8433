import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Analytics, type AnalyticsError, type DropEvent } from '@ferry/analytics';
import { within } from './support/deadline.js';
import { ManualClock, tick } from './support/manual-clock.js';
import { runModule } from './support/run-child.js';
import { SinkServer } from './support/sink-server.js';

describe('flush and close', () => {
  let sink: SinkServer;
  beforeEach(async () => {
    sink = await SinkServer.start();
  });
  afterEach(() => sink.close());

  it('close() sends everything queued, then refuses new calls with code closed', async () => {
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 50, maxInFlight: 1, clock });
    for (let i = 0; i < 120; i++) client.track({ userId: 'u', event: `E${i}` });
    const result = await within(client.close(), 'close');
    assert.deepEqual(result, { status: 'complete', delivered: 120, failed: [], unconfirmed: [] });
    assert.deepEqual(
      sink.accepted.map((m) => m['event']),
      Array.from({ length: 120 }, (_, i) => `E${i}`),
    );
    assert.deepEqual(
      sink.requests.map((r) => r.json.batch.length),
      [50, 50, 20],
    );
    assert.throws(() => client.track({ userId: 'u', event: 'late' }), { code: 'closed' });
    assert.equal(await client.close(), result, 'a second close returns the first result');
  });

  it('flush() without close() resolves once the server confirmed, and the client stays usable', async () => {
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, clock });
    client.identify({ userId: 'u', traits: { a: 1 } });
    const first = await within(client.flush(), 'the first flush');
    assert.equal(first.delivered, 1);
    assert.equal(sink.accepted.length, 1);
    client.track({ userId: 'u', event: 'after' });
    assert.equal((await within(client.flush(), 'the second flush')).delivered, 1);
    assert.equal(sink.accepted.length, 2);
    assert.deepEqual(await client.flush(), { status: 'complete', delivered: 0, failed: [], unconfirmed: [] });
    await within(client.close(), 'close');
  });

  it('flush() covers what was queued when it was called, including batches already in flight', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    sink.handler = (_req, i) => (i === 0 ? { after: held } : {});
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 2, clock });
    client.track({ userId: 'u', event: 'A' });
    client.track({ userId: 'u', event: 'B' });
    await sink.untilRequests(1);
    client.track({ userId: 'u', event: 'C' });
    const flushed = client.flush();
    await sink.untilAccepted(1);
    let settled = false;
    void flushed.then(() => (settled = true));
    await tick();
    assert.equal(settled, false, 'still waiting for the held batch');
    release();
    const result = await within(flushed, 'the flush');
    assert.equal(result.delivered, 3);
    await within(client.close(), 'close');
  });

  it('a flush() timeout lists the unconfirmed messages and keeps them queued', async () => {
    const clock = new ManualClock();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    sink.handler = () => ({ after: held });
    const client = new Analytics('wk', { endpoint: sink.url, clock, maxInFlight: 1, flushAt: 2 });
    const ids = ['A', 'B', 'C'].map((event) => client.track({ userId: 'u', event }));
    const flushed = client.flush({ timeoutMs: 1_000 });
    await sink.untilRequests(1);
    clock.advance(1_000);
    const result = await within(flushed, 'the flush');
    assert.equal(result.status, 'timeout');
    assert.deepEqual(result.unconfirmed.sort(), [...ids].sort());
    release();
    const later = await within(client.close(), 'close');
    assert.equal(later.delivered, 3, 'a flush timeout drops nothing');
    assert.deepEqual(
      sink.accepted.map((m) => m['messageId']),
      ids,
    );
  });

  it('close({ timeout }) gives up what is unconfirmed and reports it through result, drop event and callbacks', async () => {
    const clock = new ManualClock();
    sink.handler = () => ({ after: new Promise(() => {}) });
    const client = new Analytics('wk', { endpoint: sink.url, clock, maxInFlight: 1, flushAt: 1 });
    const drops: DropEvent[] = [];
    client.on('drop', (e) => drops.push(e));
    const errors = new Map<string, string | undefined>();
    let bothSettled!: () => void;
    const settled = new Promise<void>((resolve) => (bothSettled = resolve));
    const cb = (err: AnalyticsError | undefined, id: string) => {
      errors.set(id, err?.code);
      if (errors.size === 2) bothSettled();
    };
    const ids = ['A', 'B'].map((event) => client.track({ userId: 'u', event }, cb));
    const closing = client.close({ timeout: 2_000 });
    await sink.untilRequests(1);
    clock.advance(2_000);
    const result = await within(closing, 'close');
    assert.equal(result.status, 'timeout');
    assert.deepEqual(result.unconfirmed.sort(), [...ids].sort());
    // The aborted in-flight request settles once its socket is torn down.
    await within(settled, 'both callbacks');
    assert.deepEqual([...errors.values()], ['unconfirmed', 'unconfirmed']);
    assert.deepEqual(drops.flatMap((d) => d.messageIds).sort(), [...ids].sort());
    assert.ok(drops.every((d) => d.code === 'unconfirmed'));
    assert.equal(client.stats.dropped, 2);
  });

  it('an AbortSignal ends a flush wait', async () => {
    sink.handler = () => ({ after: new Promise(() => {}) });
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, clock });
    const id = client.track({ userId: 'u', event: 'E' });
    const controller = new AbortController();
    const flushed = client.flush({ signal: controller.signal });
    await sink.untilRequests(1);
    controller.abort();
    const result = await within(flushed, 'the flush');
    assert.equal(result.status, 'aborted');
    assert.deepEqual(result.unconfirmed, [id]);
    await within(client.close({ signal: AbortSignal.abort() }), 'close');
  });

  it('keeps no timer alive on its own', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const baseline = timers();
    const client = new Analytics('wk', { endpoint: sink.url, flushAt: 100, flushAfter: 60_000 });
    client.track({ userId: 'u', event: 'queued' });
    assert.equal(client.stats.queued, 1);
    assert.equal(timers(), baseline, "the flush timer is unref'd");
    await within(client.close(), 'close');
  });

  it("lets a process that never calls close() exit: no ref'd timer or socket is left", async () => {
    // In a child process: the only sockets there are the client's own.
    const child = await runModule(
      `import { Analytics } from '@ferry/analytics';
       const held = (list) => list.filter((r) => r === 'Timeout' || r === 'TCPSocketWrap');
       const client = new Analytics('wk', { endpoint: process.argv[1], flushAt: 100, flushAfter: 60000 });
       client.track({ userId: 'u', event: 'queued' });
       const queued = held(process.getActiveResourcesInfo());
       const result = await client.flush();
       await new Promise((r) => setImmediate(r));
       client.track({ userId: 'u', event: 'left behind' });
       console.log(JSON.stringify({ queued, idle: held(process.getActiveResourcesInfo()), delivered: result.delivered }));`,
      [sink.url],
    );
    assert.equal(child.code, 0, child.stderr);
    assert.deepEqual(JSON.parse(child.stdout), { queued: [], idle: [], delivered: 1 });
    assert.equal(sink.accepted.length, 1);
  });

  it('emits flush events with the messageIds each confirmed batch carried', async () => {
    const clock = new ManualClock();
    const client = new Analytics('wk', { endpoint: sink.url, clock });
    const flushed: string[][] = [];
    client.on('flush', (e) => flushed.push(e.messageIds));
    const ids = [client.track({ userId: 'u', event: 'A' }), client.page({ anonymousId: 'a', name: 'Home' })];
    await within(client.close(), 'close');
    assert.deepEqual(flushed, [ids]);
  });
});
