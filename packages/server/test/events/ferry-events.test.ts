/**
 * `ferry.events` on a real Ferry: a known workload (a batch with a refused message, its
 * webhooks delivered, the batch sent again, a stranger's key, a deletion request, a stop)
 * produces the catalogue's events with the payloads it names, and logs keep their lines.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FerryEventName, FerryEvents } from '../../src/events/catalogue.js';
import { capturedLogger } from '../helpers/captured-logger.js';
import { startFerry, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';
import { until } from '../helpers/until.js';

type Heard = { [K in FerryEventName]: { name: K; payload: FerryEvents[K] } }[FerryEventName];

test('a known workload emits ingest, delivery, regulation and lifecycle events', async (t) => {
  const receiver = await startReceiver({ status: 200 });
  t.after(() => receiver.close());
  const { logger, lines } = capturedLogger();
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', [receiver.url])]), { logger });
  let stopped = false;
  t.after(async () => {
    if (!stopped) await ferry.stop();
  });

  const heard: Heard[] = [];
  const names: FerryEventName[] = [
    'ingest:accepted',
    'ingest:rejected',
    'ingest:refused',
    'delivery:attempted',
    'delivery:succeeded',
    'regulation:done',
    'lifecycle:draining',
    'lifecycle:stopped',
  ];
  for (const name of names) ferry.ferry.events.on(name, (payload: never) => heard.push({ name, payload } as Heard));
  const of = <K extends FerryEventName>(name: K) => heard.filter((h) => h.name === name).map((h) => h.payload as FerryEvents[K]);

  const batch = {
    batch: [
      { type: 'track', userId: 'u1', event: 'A', messageId: 'm-1' },
      { type: 'track', event: 'no user' },
      { type: 'track', userId: 'u1', event: 'B', messageId: 'm-2' },
    ],
  };
  const first = await ferry.send('/v1/batch', batch);
  assert.equal(first.status, 200);
  assert.deepEqual(of('ingest:accepted'), [{ sourceId: 'app', count: 2, duplicates: 0 }]);
  // Each ingestion event names its request (X-Request-Id), so the log lines it becomes do.
  const rejectedEvents = of('ingest:rejected');
  assert.match(rejectedEvents[0]?.requestId ?? '', /^[0-9a-f-]{36}$/);
  assert.deepEqual(
    rejectedEvents.map(({ requestId: _, ...rest }) => rest),
    [{ sourceId: 'app', rejected: [{ index: 1, code: first.json.rejected[0].code }] }],
  );
  await receiver.waitFor(2);
  await until(() => of('delivery:succeeded').length === 2, 'two deliveries succeeded');
  assert.deepEqual(
    of('delivery:succeeded').map((e) => [e.destinationId, e.attempts]),
    [
      ['hooks', 1],
      ['hooks', 1],
    ],
  );
  // One exchange per delivery (one URL), each recorded before its event.
  assert.deepEqual(
    of('delivery:attempted').map((e) => [e.destinationId, e.url, e.statusCode, e.errorClass, e.outcome]),
    [
      ['hooks', receiver.url, 200, null, 'succeeded'],
      ['hooks', receiver.url, 200, null, 'succeeded'],
    ],
  );
  assert.ok(of('delivery:attempted').every((e) => e.latencyMs >= 0));

  assert.equal((await ferry.send('/v1/batch', { batch: [batch.batch[0]] })).status, 200);
  assert.deepEqual(of('ingest:accepted')[1], { sourceId: 'app', count: 0, duplicates: 1 });
  assert.equal((await ferry.send('/v1/batch', batch, { writeKey: 'nobody-has-this-key' })).status, 401);
  assert.deepEqual(
    of('ingest:refused').map(({ requestId, ...rest }) => ({ ...rest, named: typeof requestId === 'string' })),
    [{ code: 'unauthorized', status: 401, named: true }],
  );

  const regulation = await ferry.admin('POST', '/regulations', { userIds: ['u1'] });
  assert.equal(regulation.status, 202);
  await ferry.deletionsDone();
  assert.deepEqual(of('regulation:done'), [{ regulationId: regulation.json.id, eventsDeleted: 2, deliveriesDeleted: 2, notices: 1 }]);

  stopped = true;
  await ferry.stop();
  assert.deepEqual(
    heard.filter((h) => h.name.startsWith('lifecycle:')),
    [
      { name: 'lifecycle:draining', payload: { drainMs: 0 } },
      { name: 'lifecycle:stopped', payload: {} },
    ],
  );
  // The log line of refused messages is written from the event, as before.
  const rejectedLine = lines.find((l) => l.msg === 'messages rejected');
  assert.deepEqual([rejectedLine?.level, rejectedLine?.sourceId, rejectedLine?.rejected], [30, 'app', 1]);
});

test('the worker builds delivery:succeeded and delivery:attempted only while the bus has a listener for them', async (t) => {
  // Metrics are on: they count through the worker's tally, never through these events, so the
  // bus has no listener. The auto-disable hears successes from the worker itself
  // (delivery/auto-disable.ts), not through the bus: one listener of delivery:succeeded always.
  const ferry = await startFerry(testConfig([]), { deliver: false });
  assert.ok(ferry.ferry.metrics, 'metrics are on');
  t.after(() => ferry.stop());
  const { worker, events } = ferry.ferry;
  for (const [name, own] of [
    ['delivery:succeeded', 1],
    ['delivery:attempted', 0],
  ] as const) {
    assert.equal(worker.listenerCount(name), own);
    const listener = () => {};
    events.on(name, listener);
    assert.equal(worker.listenerCount(name), own + 1);
    events.off(name, listener);
    assert.equal(worker.listenerCount(name), own);
  }
});

test('a listener that throws is logged, and the request that emitted is answered as usual', async (t) => {
  const { logger, lines } = capturedLogger();
  const ferry = await startFerry(testConfig([]), { deliver: false, logger });
  t.after(() => ferry.stop());
  ferry.ferry.events.on('ingest:accepted', () => {
    throw new Error('a subscriber bug');
  });
  const res = await ferry.send('/v1/track', { userId: 'u1', event: 'A' });
  assert.deepEqual([res.status, res.json], [200, { success: true }]);
  const line = lines.find((l) => l.msg === 'an event listener failed');
  assert.deepEqual([line?.level, line?.event, line?.err?.message], [50, 'ingest:accepted', 'a subscriber bug']);
});
