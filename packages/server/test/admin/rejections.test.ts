/** GET /admin/v1/rejections?sourceId=: the recent rejections of one source only. */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, testConfig } from '../helpers/ferry.js';
import { adminCall, startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { stopPostgres } from '../helpers/postgres.js';

after(() => stopPostgres());

for (const kind of storeKinds) {
  describe(`GET /rejections (${kind})`, () => {
    test('?sourceId= lists only that source’s recent rejections; the counts stay per source; an unknown source is 404', async (t) => {
      const { server } = await startFerryOn(kind, testConfig([]), { deliver: false }, cleanups(t));
      const bad = { batch: [{ type: 'track', userId: 'u1' }, { type: 'identify' }] };
      assert.equal((await server.send('/v1/batch', bad)).status, 200);
      assert.equal((await server.send('/v1/batch', { batch: [{ type: 'track', userId: 'u1' }] }, { writeKey: 'other-write-key' })).status, 200);

      const other = await adminCall(server.url, adminToken, 'GET', '/rejections?sourceId=other');
      assert.equal(other.status, 200);
      assert.deepEqual(
        other.json.recent.map((r: any) => [r.sourceId, r.index, r.code]),
        [['other', 0, 'missing_event']],
      );
      const app = await adminCall(server.url, adminToken, 'GET', '/rejections?sourceId=app');
      assert.deepEqual(
        app.json.recent.map((r: any) => [r.sourceId, r.index, r.code]),
        [
          ['app', 1, 'missing_identity'],
          ['app', 0, 'missing_event'],
        ],
      );
      const all = await adminCall(server.url, adminToken, 'GET', '/rejections');
      assert.equal(all.json.recent.length, 3);
      assert.deepEqual(
        all.json.counts.map((c: any) => [c.sourceId, c.code, c.count]),
        [
          ['app', 'missing_event', 1],
          ['app', 'missing_identity', 1],
          ['other', 'missing_event', 1],
        ],
      );
      assert.deepEqual(other.json.counts, all.json.counts, 'the counts are not filtered by ?sourceId=');
      const unknown = await adminCall(server.url, adminToken, 'GET', '/rejections?sourceId=ghost');
      assert.equal(unknown.status, 404);
      assert.equal(unknown.json.errors[0].path, 'sourceId');
    });
  });
}
