/**
 * GET /admin/v1/tail: the event catalogue as server-sent events, over a real Ferry on
 * loopback. What each event shows, the choice of events, the heartbeat on the injected
 * clock, listeners leaving with their client, the cap on clients, and a stop that an open
 * stream does not hold.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultTailMaxClients, tailHeartbeatMs } from '../../src/admin/tail-routes.js';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, secret, startFerry, testConfig, webhooksDestination, writeKey, type TestFerry } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';
import { until } from '../helpers/until.js';
import { openStream, type OpenStream } from '../helpers/event-stream.js';
import { within } from '../helpers/within.js';

/** Opens `GET /tail` on a connection of its own. */
function openTail(t: TestFerry, query = ''): Promise<OpenStream> {
  return openStream(`${t.url}/admin/v1/tail${query}`, adminToken);
}

/** The events of a stream's text, in order: `[name, data]`. */
function eventsOf(text: string): [string, any][] {
  return [...text.matchAll(/^event: (\S+)\ndata: (.*)\n\n/gm)].map((m) => [m[1]!, JSON.parse(m[2]!)]);
}

test('streams accepted events and delivery outcomes as server-sent events, with ids, codes and latency, never a secret', async (t) => {
  const after = cleanups(t);
  const receiver = await startReceiver({ status: 200 });
  after(() => receiver.close());
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', [`${receiver.url}/in?token=hidden-query-value`])]));
  after(() => ferry.stop());

  const stream = await openTail(ferry);
  after(() => stream.close());
  assert.equal(stream.status, 200);
  assert.match(stream.headers['content-type']!, /^text\/event-stream/);
  await stream.waitFor(/^: ferry tail: /m, 'the opening comment');
  assert.equal((await ferry.send('/v1/track', { userId: 'u1', event: 'Signed Up', messageId: 'm-1' })).status, 200);
  await stream.waitFor(/^event: delivery:succeeded$/m, 'the delivery outcome');

  const events = eventsOf(stream.text());
  const names = events.map(([name]) => name);
  assert.deepEqual(names, ['ingest:accepted', 'delivery:attempted', 'delivery:succeeded']);
  const [accepted, attempted, succeeded] = events.map(([, data]) => data);
  assert.deepEqual({ ...accepted, at: undefined }, { at: undefined, sourceId: 'app', count: 1, duplicates: 0 });
  assert.match(accepted.at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  assert.equal(attempted.destinationId, 'hooks');
  assert.equal(attempted.statusCode, 200);
  assert.equal(attempted.outcome, 'succeeded');
  assert.equal(typeof attempted.latencyMs, 'number');
  assert.equal(attempted.url, `${receiver.url}/in?token=[redacted]`, 'a URL shows as the attempt log shows it');
  assert.deepEqual({ ...succeeded, at: undefined }, { at: undefined, id: attempted.id, destinationId: 'hooks', attempts: 1 });
  for (const hidden of [writeKey, secret, 'hidden-query-value', 'm-1', 'u1', 'Signed Up'])
    assert.ok(!stream.text().includes(hidden), `${hidden} must not be on the stream`);
});

test('ingest:filtered shows, per destination, how many calls of a request its filter dropped', async (t) => {
  const after = cleanups(t);
  const ferry = await startFerry(
    testConfig([
      webhooksDestination('orders', ['http://127.0.0.1:9/'], { filter: { allow: { event: { prefix: 'Order ' } } } }),
      webhooksDestination('no-pages', ['http://127.0.0.1:9/'], { filter: { drop: { type: 'page' } } }),
    ]),
    { deliver: false },
  );
  after(() => ferry.stop());
  const stream = await openTail(ferry, '?events=ingest:filtered');
  after(() => stream.close());
  await stream.waitFor(/^: ferry tail: ingest:filtered$/m, 'the opening comment');
  const batch = {
    batch: [
      { type: 'track', userId: 'u1', event: 'Order Completed' },
      { type: 'track', userId: 'u1', event: 'Signed Up' },
      { type: 'page', userId: 'u1', name: 'Pricing' },
    ],
  };
  assert.equal((await ferry.send('/v1/batch', batch)).status, 200);
  await stream.waitFor(/^event: ingest:filtered$/m, 'the filtered event');
  const events = eventsOf(stream.text());
  assert.equal(events.length, 1);
  assert.deepEqual({ ...events[0]![1], at: undefined }, { at: undefined, sourceId: 'app', filtered: { orders: 2, 'no-pages': 1 } });
  assert.ok(!stream.text().includes('Signed Up'), 'no event name on the stream');
});

test('?events= chooses the events; a name outside the catalogue is 400 bad_request, another parameter 400 unknown_parameter', async (t) => {
  const after = cleanups(t);
  const receiver = await startReceiver({ status: 400 });
  after(() => receiver.close());
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', [receiver.url])]));
  after(() => ferry.stop());

  const stream = await openTail(ferry, '?events=delivery:dead,ingest:rejected');
  after(() => stream.close());
  await stream.waitFor(/^: ferry tail: delivery:dead,ingest:rejected$/m, 'the opening comment naming the events chosen');
  const batch = {
    batch: [
      { type: 'track', userId: 'u' },
      { type: 'track', userId: 'u', event: 'E' },
      { type: 'track', anonymousId: 'a' },
    ],
  };
  assert.equal((await ferry.send('/v1/batch', batch)).status, 200);
  await stream.waitFor(/^event: delivery:dead$/m, 'the dead letter');
  const events = eventsOf(stream.text());
  assert.deepEqual(
    events.map(([name]) => name),
    ['ingest:rejected', 'delivery:dead'],
  );
  assert.deepEqual({ ...events[0]![1], at: undefined }, { at: undefined, sourceId: 'app', rejected: 2, codes: { missing_event: 2 } });
  assert.equal(events[1]![1].reason, 'non_retryable_response');
  assert.match(events[1]![1].lastError, /HTTP 400/);

  for (const [query, code, path] of [
    ['?events=ingest:accepted,nope', 'bad_request', 'events'],
    ['?events=', 'bad_request', 'events'],
    ['?events=worker:error', 'bad_request', 'events'],
    ['?since=1h', 'unknown_parameter', 'since'],
  ] as const) {
    const res = await ferry.admin('GET', `/tail${query}`);
    assert.equal(res.status, 400, query);
    assert.equal(res.json.errors[0].code, code, query);
    assert.equal(res.json.errors[0].path, path, query);
  }
  const anonymous = await fetch(`${ferry.url}/admin/v1/tail`);
  assert.equal(anonymous.status, 401);
  await anonymous.text();
});

test('a comment every 15 s on the clock keeps a quiet stream alive', async (t) => {
  const after = cleanups(t);
  const clock = new ManualClock();
  const ferry = await startFerry(testConfig([]), { clock, deliver: false });
  after(() => ferry.stop());
  const stream = await openTail(ferry, '?events=ingest:accepted');
  after(() => stream.close());
  await stream.waitFor(/^: ferry tail: /m, 'the opening comment');
  const heartbeats = () => stream.text().match(/^: heartbeat\n\n/gm)?.length ?? 0;
  // An event the stream carries after the clock moved: a heartbeat due by then was written
  // before it, on the same stream, so once the event is read the heartbeat would be too.
  const marker = async (n: number) => {
    assert.equal((await ferry.send('/v1/batch', { batch: [{ type: 'track', userId: 'u1', event: 'Marker', messageId: `marker-${n}` }] })).status, 200);
    await stream.waitFor(new RegExp(`(^event: ingest:accepted\n[^]*){${n}}`, 'm'), `the marker event ${n}`);
  };
  clock.advance(tailHeartbeatMs - 1);
  await marker(1);
  assert.equal(heartbeats(), 0, 'no heartbeat a millisecond before 15 s');
  clock.advance(1);
  await stream.waitFor(/^: heartbeat\n\n/m, 'the first heartbeat');
  clock.advance(tailHeartbeatMs - 1);
  await marker(2);
  assert.equal(heartbeats(), 1, 'no second heartbeat a millisecond before 15 s more');
  clock.advance(1);
  await stream.waitFor(/(^: heartbeat\n\n[^]*){2}/m, 'the second heartbeat');
  assert.equal(heartbeats(), 2);
});

test('a client that goes away takes its listeners with it; past the cap a new stream is refused 429 until one closes', async (t) => {
  const after = cleanups(t);
  const ferry = await startFerry(testConfig([]), { deliver: false });
  after(() => ferry.stop());
  const bus = ferry.ferry.events;
  const before = bus.listenerCount('ingest:accepted');

  const streams: OpenStream[] = [];
  after(() => streams.forEach((s) => s.close()));
  for (let i = 0; i < defaultTailMaxClients; i++) streams.push(await openTail(ferry, '?events=ingest:accepted'));
  assert.ok(streams.every((s) => s.status === 200));
  assert.equal(bus.listenerCount('ingest:accepted'), before + defaultTailMaxClients);

  const refused = await ferry.admin('GET', '/tail');
  assert.equal(refused.status, 429);
  assert.equal(refused.json.errors[0].code, 'too_many_tail_clients');

  streams.shift()!.close();
  await until(() => bus.listenerCount('ingest:accepted') === before + defaultTailMaxClients - 1, 'the closed stream to leave the bus');
  const another = await openTail(ferry, '?events=ingest:accepted');
  streams.push(another);
  assert.equal(another.status, 200);

  for (const s of streams) s.close();
  await until(() => bus.listenerCount('ingest:accepted') === before, 'every stream to leave the bus');
});

test('a stop is not held by open streams: each ends, after lifecycle:draining, and the stop completes', async (t) => {
  const after = cleanups(t);
  const ferry = await startFerry(testConfig([]), { deliver: false });
  const streams = [await openTail(ferry), await openTail(ferry, '?events=ingest:accepted')];
  after(() => streams.forEach((s) => s.close()));
  await Promise.all(streams.map((s) => s.waitFor(/^: ferry tail: /m, 'the opening comment')));
  await within(10_000, 'the stop with two tail streams open', ferry.stop());
  await within(10_000, 'the streams to end', Promise.all(streams.map((s) => s.ended)));
  assert.deepEqual(
    eventsOf(streams[0]!.text()).map(([name]) => name),
    ['lifecycle:draining'],
  );
  assert.deepEqual(eventsOf(streams[1]!.text()), [], 'a stream that did not choose lifecycle:draining is ended without it');
});
