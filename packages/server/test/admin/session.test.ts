/** GET /admin/v1/session: who the caller is, for a client to show only what its token may do. */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, testConfig } from '../helpers/ferry.js';
import { adminCall, startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { stopPostgres } from '../helpers/postgres.js';

after(() => stopPostgres());

for (const kind of storeKinds) {
  describe(`GET /session (${kind})`, () => {
    test('answers the token id and scope of the caller, never the token, and 401 without one', async (t) => {
      const { server } = await startFerryOn(kind, testConfig([]), { deliver: false }, cleanups(t));
      const bootstrap = await adminCall(server.url, adminToken, 'GET', '/session');
      assert.equal(bootstrap.status, 200);
      assert.deepEqual(bootstrap.json, { tokenId: 'bootstrap', scope: 'admin' });

      for (const scope of ['read', 'admin'] as const) {
        const made = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: `dashboard-${scope}`, scope })).json;
        const session = await adminCall(server.url, made.token, 'GET', '/session');
        assert.equal(session.status, 200);
        assert.deepEqual(session.json, { tokenId: made.id, scope });
        assert.ok(!JSON.stringify(session.json).includes(made.token));
      }

      const none = await adminCall(server.url, undefined, 'GET', '/session');
      assert.equal(none.status, 401);
      assert.equal(none.json.errors[0].code, 'admin_unauthorized');
      const unknownParameter = await adminCall(server.url, adminToken, 'GET', '/session?token=1');
      assert.equal(unknownParameter.status, 400);
      assert.equal(unknownParameter.json.errors[0].code, 'unknown_parameter');
    });
  });
}
