/**
 * POST /admin/v1/deliveries/{id}/replay: any finished delivery, delivered or dead, is sent
 * again with the same body and messageId; one still pending is a 409.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { adminCall, startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { stopPostgres } from '../helpers/postgres.js';
import { startReceiver } from '../helpers/receiver.js';

after(() => stopPostgres());

const T0 = Date.parse('2026-03-01T10:00:00.000Z');

for (const kind of storeKinds) {
  describe(`replay of one finished delivery (${kind})`, () => {
    test('a delivered one and a dead one arrive again, same body and messageId; a pending one is a 409 and stays as it is', async (t) => {
      const onCleanup = cleanups(t);
      const ok = await startReceiver({ status: 200 });
      onCleanup(() => ok.close());
      const refusing = await startReceiver({ status: 400 });
      onCleanup(() => refusing.close());
      const clock = new ManualClock(T0);
      const config = testConfig([
        webhooksDestination('hooks', [ok.url]),
        webhooksDestination('refusing', [refusing.url]),
        // Nothing listens there: its delivery waits for a retry, pending.
        webhooksDestination('down', ['http://127.0.0.1:9/hook'], { circuitBreaker: { enabled: false } }),
      ]);
      const { server, rows } = await startFerryOn(kind, config, { clock, deliver: false }, onCleanup);
      assert.equal((await server.send('/v1/batch', { batch: [{ type: 'track', userId: 'u1', event: 'Paid', messageId: 'm1' }] })).status, 200);
      await server.idle();
      const found = (await server.admin('GET', '/deliveries?messageId=m1')).json.deliveries as any[];
      const by = (d: string) => found.find((x) => x.destinationId === d);
      assert.deepEqual(
        ['hooks', 'refusing', 'down'].map((d) => by(d).status),
        ['succeeded', 'dead', 'pending'],
      );
      assert.equal(ok.requests.length, 1);
      // What metrics read: pending and dead per destination, kept by the store's writes on SQLite.
      const backlog = async () =>
        Object.fromEntries((await server.ferry.store.backlog()).map((b) => [b.destinationId, [b.pending, b.dead]])) as Record<string, [number, number]>;
      assert.deepEqual(await backlog(), { down: [1, 0], refusing: [0, 1] });

      clock.advance(60_000);
      const replayed = await server.admin('POST', `/deliveries/${by('hooks').id}/replay`);
      assert.deepEqual([replayed.status, replayed.json], [200, { replayed: 1 }]);
      const again = (await server.admin('GET', `/deliveries/${by('hooks').id}`)).json;
      assert.deepEqual([again.status, again.attemptCount, again.completedAt, again.nextAttemptAt], ['pending', 0, null, new Date(T0 + 60_000).toISOString()]);
      assert.deepEqual(await backlog(), { down: [1, 0], hooks: [1, 0], refusing: [0, 1] }, 'a delivered one replayed is pending');
      await server.idle();
      await ok.waitFor(2);
      const [first, second] = ok.requests;
      assert.deepEqual(second!.body, first!.body, 'the exact bytes again');
      assert.equal(JSON.parse(second!.body.toString('utf8')).messageId, 'm1', 'the same messageId, for the receiver to deduplicate');
      const delivered = (await server.admin('GET', `/deliveries/${by('hooks').id}`)).json;
      assert.equal(delivered.status, 'succeeded');
      assert.deepEqual(
        delivered.attempts.map((a: any) => [a.trigger, a.statusCode]),
        [
          ['scheduled', 200],
          ['manual', 200],
        ],
        'the attempts of both windows are kept, the replay marked manual',
      );

      assert.deepEqual((await server.admin('POST', `/deliveries/${by('refusing').id}/replay`)).json, { replayed: 1 }, 'a dead one too');
      assert.deepEqual(await backlog(), { down: [1, 0], refusing: [1, 0] }, 'a dead one replayed is pending, no longer dead');
      await server.idle();
      await refusing.waitFor(2);
      assert.deepEqual(refusing.requests[1]!.body, refusing.requests[0]!.body);
      assert.equal((await server.admin('GET', `/deliveries/${by('refusing').id}`)).json.status, 'dead', 'refused again, dead again');
      assert.equal((await server.admin('GET', '/dead-letters')).json.deliveries.length, 1);
      assert.deepEqual(await backlog(), { down: [1, 0], refusing: [0, 1] });

      const down = (await server.admin('GET', `/deliveries/${by('down').id}`)).json;
      const pending = await server.admin('POST', `/deliveries/${by('down').id}/replay`);
      assert.equal(pending.status, 409);
      assert.equal(pending.json.errors[0].code, 'delivery_not_finished');
      const stillDown = (await server.admin('GET', `/deliveries/${by('down').id}`)).json;
      assert.deepEqual(
        [stillDown.status, stillDown.attemptCount, stillDown.firstAttemptAt, stillDown.nextAttemptAt],
        ['pending', down.attemptCount, down.firstAttemptAt, down.nextAttemptAt],
        'its retry window goes on untouched',
      );

      const audit = (await server.admin('GET', '/audit')).json.entries as any[];
      assert.deepEqual(
        audit.filter((e) => e.action === 'delivery.replay').map((e) => [e.path, e.status]),
        [
          [`/admin/v1/deliveries/${by('down').id}/replay`, 409],
          [`/admin/v1/deliveries/${by('refusing').id}/replay`, 200],
          [`/admin/v1/deliveries/${by('hooks').id}/replay`, 200],
        ],
      );
      assert.equal(
        (await rows(`SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending'`)).map((r) => Number(r['n']))[0],
        1,
        'only the one still retrying is pending',
      );
    });

    test('unknown, malformed or of a deleted destination: 404; a body key: 400; a read token: 403', async (t) => {
      const onCleanup = cleanups(t);
      const ok = await startReceiver({ status: 200 });
      onCleanup(() => ok.close());
      const config = testConfig([webhooksDestination('hooks', [ok.url]), webhooksDestination('gone', [ok.url])]);
      const { server } = await startFerryOn(kind, config, { deliver: false }, onCleanup);
      assert.equal((await server.send('/v1/batch', { batch: [{ type: 'track', userId: 'u1', event: 'Paid', messageId: 'm1' }] })).status, 200);
      await server.idle();
      const found = (await server.admin('GET', '/deliveries?messageId=m1')).json.deliveries as any[];
      const hooks = found.find((d) => d.destinationId === 'hooks').id;
      const gone = found.find((d) => d.destinationId === 'gone').id;
      assert.equal((await server.admin('DELETE', '/destinations/gone')).status, 204);

      for (const path of ['/deliveries/999999/replay', '/deliveries/abc/replay', `/deliveries/${gone}/replay`]) {
        const res = await server.admin('POST', path);
        assert.deepEqual([res.status, res.json.errors[0].code], [404, 'not_found'], path);
      }
      const withKey = await server.admin('POST', `/deliveries/${hooks}/replay`, { force: true });
      assert.deepEqual([withKey.status, withKey.json.errors[0].code], [400, 'unknown_parameter']);
      const read = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'viewer', scope: 'read' })).json.token;
      const refused = await adminCall(server.url, read, 'POST', `/deliveries/${hooks}/replay`);
      assert.deepEqual([refused.status, refused.json.errors[0].code], [403, 'admin_forbidden']);
      assert.equal((await server.admin('GET', `/deliveries/${hooks}`)).json.status, 'succeeded', 'nothing was replayed');
      await server.idle();
      assert.equal(ok.requests.length, 2, 'one each, at the start; nothing more');
    });
  });
}
