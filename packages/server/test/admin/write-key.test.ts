/** GET /admin/v1/sources/{id}/write-key: the one route that answers an existing secret, to admin tokens, audited. */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, testConfig, writeKey } from '../helpers/ferry.js';
import { adminCall, startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { stopPostgres } from '../helpers/postgres.js';

after(() => stopPostgres());

for (const kind of storeKinds) {
  describe(`GET /sources/{id}/write-key (${kind})`, () => {
    test('answers the key to an admin token, not cached, and audits the reveal without the key; 403 for a read token; 404 for an unknown source', async (t) => {
      const { server, rows } = await startFerryOn(kind, testConfig([]), { deliver: false }, cleanups(t));
      const res = await fetch(`${server.url}/admin/v1/sources/app/write-key`, { headers: { authorization: `Bearer ${adminToken}` } });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assert.deepEqual(await res.json(), { writeKey });

      const newKey = 'a-new-write-key-0123456789';
      assert.equal((await adminCall(server.url, adminToken, 'PUT', '/sources/app', { name: 'App', writeKey: newKey })).status, 200);
      assert.deepEqual((await adminCall(server.url, adminToken, 'GET', '/sources/app/write-key')).json, { writeKey: newKey });

      const read = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'viewer', scope: 'read' })).json;
      const refused = await adminCall(server.url, read.token, 'GET', '/sources/app/write-key');
      assert.equal(refused.status, 403);
      assert.equal(refused.json.errors[0].code, 'admin_forbidden');
      const head = await fetch(`${server.url}/admin/v1/sources/app/write-key`, { method: 'HEAD', headers: { authorization: `Bearer ${read.token}` } });
      assert.equal(head.status, 403, 'HEAD is refused to a read token as GET is');
      const unknown = await adminCall(server.url, adminToken, 'GET', '/sources/ghost/write-key');
      assert.equal(unknown.status, 404);
      assert.equal(unknown.json.errors[0].code, 'not_found');

      const entries = (await adminCall(server.url, adminToken, 'GET', '/audit')).json.entries;
      const reveals = entries.filter((e: any) => e.action === 'source.reveal-write-key');
      assert.deepEqual(reveals.map((e: any) => [e.tokenId, e.method, e.path, e.object, e.status, e.error]).reverse(), [
        ['bootstrap', 'GET', '/admin/v1/sources/app/write-key', { kind: 'source', id: 'app' }, 200, null],
        ['bootstrap', 'GET', '/admin/v1/sources/app/write-key', { kind: 'source', id: 'app' }, 200, null],
        [read.id, 'GET', '/admin/v1/sources/app/write-key', { kind: 'source', id: 'app' }, 403, 'admin_forbidden'],
        [read.id, 'HEAD', '/admin/v1/sources/app/write-key', { kind: 'source', id: 'app' }, 403, 'admin_forbidden'],
        ['bootstrap', 'GET', '/admin/v1/sources/ghost/write-key', { kind: 'source', id: 'ghost' }, 404, 'not_found'],
      ]);
      assert.deepEqual(reveals[3].after, { id: 'app', name: 'App', writeKeyHint: '…6789' }, 'the source as the API shows it, its hint only');
      const stored = JSON.stringify(await rows('SELECT * FROM audit_log'));
      assert.ok(!stored.includes(writeKey) && !stored.includes(newKey), 'no write key in the audit log');
      assert.equal(entries.filter((e: any) => e.method === 'GET' && e.action !== 'source.reveal-write-key').length, 0, 'other reads are not audited');
    });
  });
}
