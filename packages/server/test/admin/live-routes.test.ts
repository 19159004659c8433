/**
 * GET /admin/v1/sources/{id}/live: one source's stored messages as server-sent events, read
 * with a real HTTP client while real POSTs to /v1/batch ingest them.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { tailHeartbeatMs } from '../../src/admin/event-streams.js';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { eventsOf, openStream } from '../helpers/event-stream.js';
import { adminToken, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { adminCall, startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { stopPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';

after(() => stopPostgres());

const config = () =>
  testConfig([
    webhooksDestination('orders', ['http://127.0.0.1:9/'], { filter: { allow: { event: { prefix: 'Order ' } } } }),
    webhooksDestination('all', ['http://127.0.0.1:9/']),
  ]);

for (const kind of storeKinds) {
  describe(`GET /sources/{id}/live (${kind})`, () => {
    test("streams each new message of the source as stored, with its routing; not duplicates, not another source's", async (t) => {
      const clock = new ManualClock();
      const { server, rows } = await startFerryOn(kind, config(), { clock, deliver: false }, cleanups(t));
      const bus = server.ferry.events;
      assert.equal(bus.listenerCount('ingest:message'), 0, 'nobody listens before a stream opens');
      const stream = await openStream(`${server.url}/admin/v1/sources/app/live`, adminToken);
      t.after(() => stream.close());
      assert.equal(stream.status, 200);
      assert.match(stream.headers['content-type']!, /^text\/event-stream/);
      assert.equal(stream.headers['cache-control'], 'no-store');
      await stream.waitFor(/^: ferry live: source app$/m, 'the opening comment');

      const first = {
        batch: [
          { type: 'track', userId: 'u1', event: 'Order Completed', messageId: 'm-1', properties: { total: 12 } },
          { type: 'track', userId: 'u1', event: 'Signed Up', messageId: 'm-2' },
          { type: 'identify', userId: 'u1', messageId: 'm-3', traits: { plan: 'pro' } },
          { type: 'identify', userId: 'u1', messageId: 'm-3', traits: { plan: 'repeated in the batch' } },
        ],
      };
      assert.equal((await server.send('/v1/batch', first)).status, 200);
      await stream.waitFor(/"messageId":"m-3"/, 'the third message');
      assert.equal(
        (
          await server.send(
            '/v1/batch',
            { batch: [{ type: 'track', userId: 'u9', event: 'Order Elsewhere', messageId: 'o-1' }] },
            { writeKey: 'other-write-key' },
          )
        ).status,
        200,
      );
      clock.advance(1000);
      const second = { batch: [first.batch[0], { type: 'track', userId: 'u2', event: 'Order Refunded', messageId: 'm-4' }] };
      assert.equal((await server.send('/v1/batch', second)).status, 200);
      await stream.waitFor(/"messageId":"m-4"/, 'the fourth message');

      const events = eventsOf(stream.text());
      assert.ok(events.every(([name]) => name === 'message'));
      const seen = events.map(([, d]) => [d.message.messageId, d.routedTo, d.filtered]);
      assert.deepEqual(seen, [
        ['m-1', ['all', 'orders'], []],
        ['m-2', ['all'], ['orders']],
        ['m-3', ['all'], ['orders']],
        ['m-4', ['all', 'orders'], []],
      ]);
      assert.deepEqual(
        events.map(([, d]) => d.receivedAt),
        [0, 0, 0, 1000].map((ms) => new Date(clock.now() - 1000 + ms).toISOString()),
      );
      const stored = await rows(`SELECT message_id, json FROM events WHERE source_id = 'app' ORDER BY message_id`);
      assert.deepEqual(
        events.map(([, d]) => d.message),
        stored.map((r) => JSON.parse(r['json'] as string)),
        'each message as stored',
      );
      assert.equal(events[2]![1].message.traits.plan, 'pro', 'a messageId repeated in a batch: its first copy, once');
      assert.ok(!stream.text().includes('o-1'), "another source's message is not streamed");

      stream.close();
      await until(() => bus.listenerCount('ingest:message') === 0, 'the stream to leave the bus');
    });

    test('only a watched source pays: an unwatched one emits no ingest:message while another is watched, the watched one still streams', async (t) => {
      const { server } = await startFerryOn(kind, config(), { clock: new ManualClock(), deliver: false }, cleanups(t));
      const bus = server.ferry.events;
      // A listener of the bus, as any subscriber: it hears every ingest:message ingestion emits.
      const emitted: string[] = [];
      const hear = (p: { sourceId: string; json: string }) => emitted.push(`${p.sourceId}:${JSON.parse(p.json).messageId}`);
      bus.on('ingest:message', hear);
      t.after(() => bus.off('ingest:message', hear));
      const other = (messageId: string) =>
        server.send('/v1/batch', { batch: [{ type: 'track', userId: 'u9', event: 'Order Elsewhere', messageId }] }, { writeKey: 'other-write-key' });

      assert.equal((await other('o-1')).status, 200);
      assert.deepEqual(emitted, [], 'nobody watches: no source emits, though the bus has a listener');

      const stream = await openStream(`${server.url}/admin/v1/sources/app/live`, adminToken);
      t.after(() => stream.close());
      await stream.waitFor(/^: ferry live: source app$/m, 'the opening comment');
      assert.equal((await other('o-2')).status, 200);
      assert.equal((await server.send('/v1/batch', { batch: [{ type: 'track', userId: 'u1', event: 'Order Completed', messageId: 'm-1' }] })).status, 200);
      await stream.waitFor(/"messageId":"m-1"/, 'the watched source streams');
      assert.deepEqual(emitted, ['app:m-1'], "another source's ingestion emits nothing while app is watched");

      const second = await openStream(`${server.url}/admin/v1/sources/app/live`, adminToken);
      t.after(() => second.close());
      await second.waitFor(/^: ferry live: source app$/m, 'the second opening comment');
      second.close();
      await until(() => bus.listenerCount('ingest:message') === 2, 'the second stream to leave the bus');
      assert.equal((await server.send('/v1/batch', { batch: [{ type: 'track', userId: 'u1', event: 'Order Completed', messageId: 'm-2' }] })).status, 200);
      await stream.waitFor(/"messageId":"m-2"/, 'the first stream still watches once the second left');

      stream.close();
      await until(() => bus.listenerCount('ingest:message') === 1, 'the first stream to leave the bus');
      assert.equal((await server.send('/v1/batch', { batch: [{ type: 'track', userId: 'u1', event: 'Order Completed', messageId: 'm-3' }] })).status, 200);
      assert.deepEqual(emitted, ['app:m-1', 'app:m-2'], 'no stream left: app is unwatched again');
    });

    test('404 for an unknown source; a read token may watch; a heartbeat every 15 s on the clock; a stop ends the stream', async (t) => {
      const clock = new ManualClock();
      const { server } = await startFerryOn(kind, config(), { clock, deliver: false }, cleanups(t));
      const unknown = await adminCall(server.url, adminToken, 'GET', '/sources/ghost/live');
      assert.equal(unknown.status, 404);
      assert.equal(unknown.json.errors[0].code, 'not_found');

      const read = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'viewer', scope: 'read' })).json.token;
      const stream = await openStream(`${server.url}/admin/v1/sources/app/live`, read);
      t.after(() => stream.close());
      assert.equal(stream.status, 200);
      await stream.waitFor(/^: ferry live: /m, 'the opening comment');
      clock.advance(tailHeartbeatMs - 1);
      // A message streamed after the clock moved: a heartbeat due by then was written before it,
      // on the same stream, so once the message is read the heartbeat would be too.
      assert.equal((await server.send('/v1/batch', { batch: [{ type: 'track', userId: 'u1', event: 'Marker', messageId: 'marker' }] })).status, 200);
      await stream.waitFor(/"messageId":"marker"/, 'the marker message');
      assert.doesNotMatch(stream.text(), /heartbeat/, 'no heartbeat a millisecond before 15 s');
      clock.advance(1);
      await stream.waitFor(/^: heartbeat\n\n/m, 'the first heartbeat');

      await server.ferry.stop();
      await stream.ended;
      assert.equal(server.ferry.events.listenerCount('ingest:message'), 0);
    });
  });
}
