/**
 * GET /admin/v1/series: per-minute counts of messages stored and deliveries' outcomes, kept
 * in memory, written to the store once a minute on the injected clock, summed across nodes.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { activityFlushIntervalMs, activityKeptMs } from '../../src/metrics/activity-series.js';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { adminCall, startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { stopPostgres } from '../helpers/postgres.js';
import { startReceiver } from '../helpers/receiver.js';

after(() => stopPostgres());

const minute = 60_000;
const start = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const zero = { accepted: 0, delivered: 0, retried: 0, dead: 0 };
const track = (event: string, i: number) => ({ type: 'track', userId: 'u1', event, messageId: `${event}-${i}` });

for (const kind of storeKinds) {
  describe(`GET /series (${kind})`, () => {
    test('counts per minute what was stored, delivered, retried and dead-lettered; the minute is written to the store once closed and counted once', async (t) => {
      const clock = new ManualClock(start);
      // A 500 is retried, a 400 is dead at once.
      const receiver = await startReceiver((req) => ({ status: req.json?.event === 'Retry' ? 500 : req.json?.event === 'Bad' ? 400 : 200 }));
      t.after(() => receiver.close());
      const { server, rows } = await startFerryOn(kind, testConfig([webhooksDestination('hooks', [receiver.url])]), { clock, deliver: false }, cleanups(t));
      const series = async (query = '') => {
        const res = await adminCall(server.url, adminToken, 'GET', `/series${query}`);
        assert.equal(res.status, 200, JSON.stringify(res.json));
        return res.json;
      };

      const empty = await series();
      assert.equal(empty.bucketSeconds, 60);
      assert.equal(empty.buckets.length, 60);
      assert.deepEqual(empty.buckets.at(-1), { t: iso(start), ...zero });
      assert.deepEqual(empty.buckets[0], { t: iso(start - 59 * minute), ...zero });

      clock.set(start + 30_000);
      const batch = { batch: [track('Ok', 1), track('Ok', 2), track('Retry', 3), track('Bad', 4)] };
      assert.equal((await server.send('/v1/batch', batch)).status, 200);
      assert.equal((await server.send('/v1/batch', batch)).status, 200, 'duplicates are not counted');
      await server.idle();
      const now = await series();
      assert.deepEqual(now.buckets.at(-1), { t: iso(start), accepted: 4, delivered: 2, retried: 1, dead: 1 });
      assert.ok(now.buckets.slice(0, -1).every((b: any) => b.accepted + b.delivered + b.retried + b.dead === 0));
      assert.deepEqual(await rows('SELECT * FROM activity_counts'), [], 'the current minute is not written yet');

      // The flush timer runs on the clock; an answer waits for a flush under way.
      clock.set(start + activityFlushIntervalMs + 1000);
      const later = await series();
      assert.deepEqual(later.buckets.at(-2), { t: iso(start), accepted: 4, delivered: 2, retried: 1, dead: 1 }, 'counted once, from the store');
      assert.deepEqual(later.buckets.at(-1), { t: iso(start + minute), ...zero });
      const stored = (await rows('SELECT minute, kind, count FROM activity_counts ORDER BY kind')).map((r) => [
        Number(r['minute']),
        r['kind'],
        Number(r['count']),
      ]);
      assert.deepEqual(stored, [
        [start, 'accepted', 4],
        [start, 'dead', 1],
        [start, 'delivered', 2],
        [start, 'retried', 1],
      ]);

      const day = await series('?window=24h');
      assert.equal(day.bucketSeconds, 300);
      assert.equal(day.buckets.length, 288);
      assert.deepEqual(day.buckets.at(-1), { t: iso(start), accepted: 4, delivered: 2, retried: 1, dead: 1 }, 'five minutes a bucket');
      assert.equal(day.buckets[0].t, iso(start - 287 * 5 * minute));
    });

    test("sums every node's rows, deletes those older than 25 h at a flush, and writes the current minute at stop", async (t) => {
      const clock = new ManualClock(start);
      const { server, rows } = await startFerryOn(kind, testConfig([]), { clock, deliver: false }, cleanups(t));
      // Another node's minutes, written as that node writes them: one in the window, one past 25 h.
      await server.ferry.store.activity.add('node-b', [{ minuteMs: start - 2 * minute, kind: 'delivered', count: 5 }], 0);
      await server.ferry.store.activity.add('node-b', [{ minuteMs: start - activityKeptMs - minute, kind: 'accepted', count: 9 }], 0);
      await server.ferry.store.activity.add('node-b', [{ minuteMs: start - 2 * minute, kind: 'delivered', count: 1 }], 0);
      const res = await adminCall(server.url, adminToken, 'GET', '/series');
      assert.deepEqual(res.json.buckets.at(-3), { t: iso(start - 2 * minute), ...zero, delivered: 6 }, 'a row added to grows');

      clock.advance(activityFlushIntervalMs);
      await adminCall(server.url, adminToken, 'GET', '/series');
      assert.deepEqual(
        (await rows('SELECT node, minute FROM activity_counts')).map((r) => [r['node'], Number(r['minute'])]),
        [['node-b', start - 2 * minute]],
        'the row past 25 h is gone',
      );

      assert.equal((await server.send('/v1/batch', { batch: [track('Ok', 1)] })).status, 200);
      await server.ferry.stop();
      const mine = await rows(`SELECT minute, kind, count FROM activity_counts WHERE node <> 'node-b'`);
      assert.deepEqual(
        mine.map((r) => [Number(r['minute']), r['kind'], Number(r['count'])]),
        [[start + minute, 'accepted', 1]],
      );
    });

    test('a window other than 1h or 24h is 400 bad_request; another parameter 400 unknown_parameter; a read token may ask', async (t) => {
      const { server } = await startFerryOn(kind, testConfig([]), { deliver: false }, cleanups(t));
      for (const [query, code, path] of [
        ['?window=7d', 'bad_request', 'window'],
        ['?window=', 'bad_request', 'window'],
        ['?from=0', 'unknown_parameter', 'from'],
      ]) {
        const res = await adminCall(server.url, adminToken, 'GET', `/series${query}`);
        assert.equal(res.status, 400, query);
        assert.equal(res.json.errors[0].code, code, query);
        assert.equal(res.json.errors[0].path, path, query);
      }
      const read = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'viewer', scope: 'read' })).json.token;
      assert.equal((await adminCall(server.url, read, 'GET', '/series?window=24h')).status, 200);
    });
  });
}
