/**
 * POST /admin/v1/destinations/{id}/test: one synthetic track call sent now, through the
 * rendering, signing and transport of delivery, to real receivers; nothing queued or stored.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { verifySignature } from '@ferry/webhooks';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, secret, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { adminCall, startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { stopPostgres } from '../helpers/postgres.js';
import { startReceiver } from '../helpers/receiver.js';
import { referenceVerifies, whsec } from '../helpers/standard-webhooks.js';

after(() => stopPostgres());

for (const kind of storeKinds) {
  describe(`POST /destinations/{id}/test (${kind})`, () => {
    test('a disabled destination gets one signed call per URL now, the answer names each outcome, and nothing is stored', async (t) => {
      const clock = new ManualClock();
      const fine = await startReceiver({ status: 200, body: 'fine' });
      const failing = await startReceiver({ status: 500, body: 'broken' });
      t.after(() => Promise.all([fine.close(), failing.close()]));
      const standard = whsec(7);
      const destination = webhooksDestination('hooks', [fine.url + '/in', failing.url + '/in?token=abc'], {
        enabled: false,
        settings: { standardWebhooks: { secrets: [standard] } },
      });
      const { server, rows } = await startFerryOn(kind, testConfig([destination]), { clock, deliver: false }, cleanups(t));

      const res = await adminCall(server.url, adminToken, 'POST', '/destinations/hooks/test', { event: 'Checkout Tested' });
      assert.equal(res.status, 200);
      assert.equal(res.json.ok, false, 'one URL answered 500');
      assert.equal(res.json.attempts.length, 2);
      for (const a of res.json.attempts) assert.equal(typeof a.latencyMs, 'number');
      assert.deepEqual(
        res.json.attempts.map(({ latencyMs: _, ...a }: any) => a),
        [
          { url: fine.url + '/in', statusCode: 200, errorClass: null, responseBodyStart: 'fine' },
          { url: failing.url + '/in?token=[redacted]', statusCode: 500, errorClass: 'http', responseBodyStart: 'broken' },
        ],
      );

      const [got] = await fine.waitFor(1);
      const body = got!.json;
      assert.equal(body.type, 'track');
      assert.equal(body.event, 'Checkout Tested');
      assert.equal(body.userId, 'ferry-test');
      assert.deepEqual(body.properties, { test: true });
      assert.match(body.messageId, /^[0-9a-f-]{36}$/);
      assert.ok(verifySignature(got!.body, got!.headers['x-signature'] as string, secret), 'X-Signature verifies with the shared secret');
      assert.ok(referenceVerifies(standard, got!.body, got!.headers, clock.now()), 'the Standard Webhooks signature verifies');
      assert.equal(got!.headers['x-ferry-source'], 'app');
      assert.equal((await failing.waitFor(1))[0]!.json.messageId, body.messageId, 'one call, the same to every URL');

      const again = await adminCall(server.url, adminToken, 'POST', '/destinations/hooks/test');
      assert.equal(again.status, 200);
      const [, second] = await fine.waitFor(2);
      assert.equal(second!.json.event, 'Ferry Test Event', 'the default event name');
      assert.notEqual(second!.json.messageId, body.messageId, 'a fresh messageId each time');

      assert.deepEqual(await rows('SELECT id FROM deliveries'), [], 'no delivery row');
      assert.deepEqual(await rows('SELECT id FROM events'), [], 'no event');
      const audit = await adminCall(server.url, adminToken, 'GET', '/audit');
      assert.deepEqual(
        audit.json.entries.map((e: any) => [e.action, e.object, e.status]),
        [
          ['destination.test', { kind: 'destination', id: 'hooks' }, 200],
          ['destination.test', { kind: 'destination', id: 'hooks' }, 200],
        ],
      );
    });

    test('the SSRF guard of delivery applies: a loopback URL is refused, nothing sent', async (t) => {
      const receiver = await startReceiver({ status: 200 });
      t.after(() => receiver.close());
      const config = testConfig([webhooksDestination('hooks', [receiver.url])], { network: { allowPrivateNetworks: false } });
      const { server } = await startFerryOn(kind, config, { deliver: false }, cleanups(t));
      const res = await adminCall(server.url, adminToken, 'POST', '/destinations/hooks/test', {});
      assert.equal(res.status, 200);
      assert.equal(res.json.ok, false);
      assert.deepEqual(
        res.json.attempts.map((a: any) => [a.url, a.statusCode, a.errorClass]),
        [[receiver.url, null, 'ssrf']],
      );
      assert.equal(receiver.requests.length, 0);
    });

    test('ok when every URL answers 2xx; 404 for an unknown destination; 400 for a bad body; 403 for a read token', async (t) => {
      const receiver = await startReceiver({ status: 204 });
      t.after(() => receiver.close());
      const { server } = await startFerryOn(kind, testConfig([webhooksDestination('hooks', [receiver.url])]), { deliver: false }, cleanups(t));
      const res = await adminCall(server.url, adminToken, 'POST', '/destinations/hooks/test', {});
      assert.equal(res.status, 200);
      assert.equal(res.json.ok, true);
      assert.deepEqual(
        res.json.attempts.map(({ latencyMs: _, ...a }: any) => a),
        [{ url: receiver.url, statusCode: 204, errorClass: null, responseBodyStart: null }],
      );

      const unknown = await adminCall(server.url, adminToken, 'POST', '/destinations/ghost/test', {});
      assert.equal(unknown.status, 404);
      assert.equal(unknown.json.errors[0].code, 'not_found');
      for (const [bad, path, code] of [
        [{ event: '' }, 'event', 'bad_request'],
        [{ event: 5 }, 'event', 'bad_request'],
        [{ name: 'x' }, 'name', 'unknown_parameter'],
        [[], undefined, 'bad_request'],
      ] as const) {
        const refused = await adminCall(server.url, adminToken, 'POST', '/destinations/hooks/test', bad);
        assert.equal(refused.status, 400, JSON.stringify(bad));
        assert.equal(refused.json.errors[0].code, code, JSON.stringify(bad));
        assert.equal(refused.json.errors[0].path, path, JSON.stringify(bad));
      }
      const read = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'viewer', scope: 'read' })).json.token;
      const forbidden = await adminCall(server.url, read, 'POST', '/destinations/hooks/test', {});
      assert.equal(forbidden.status, 403);
      assert.equal(forbidden.json.errors[0].code, 'admin_forbidden');
      assert.equal(receiver.requests.length, 1, 'only the first test reached the receiver');
    });
  });
}
