/**
 * Destination filters and field removal on a real server, on both stores: a call a filter
 * drops makes no delivery row and is counted (the metrics scrape and the destination's stats);
 * a destination that removes fields gets a body without them, signed as sent (X-Signature and
 * Standard Webhooks, the latter checked by the `standardwebhooks` package); the admin API
 * refuses a bad filter with the path of its clause and edits a good one; deletion notices are
 * not filtered.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { verifySignature } from '@ferry/webhooks';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, secret, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { parsePrometheus } from '../helpers/prometheus.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { referenceVerifies, whsec } from '../helpers/standard-webhooks.js';

const whsecret = whsec(7);

const batch = {
  batch: [
    { type: 'track', userId: 'u1', event: 'Order Completed', messageId: 'm-1', properties: { total: 120, email: 'a@example.com' } },
    { type: 'track', userId: 'u1', event: 'Signed Up', messageId: 'm-2', properties: { plan: 'free' } },
    { type: 'track', userId: 'u1', event: 'Order Refunded', messageId: 'm-3', properties: { total: 5, test: true } },
    { type: 'identify', userId: 'u1', messageId: 'm-4', traits: { email: 'a@example.com', phone: '+100', name: 'Ada' }, context: { ip: '203.0.113.9' } },
  ],
};

for (const kind of storeKinds) {
  describe(`filters and field removal on ${kind}`, () => {
    let all: TestReceiver;
    let orders: TestReceiver;
    let privacy: TestReceiver;
    before(async () => {
      all = await startReceiver();
      orders = await startReceiver();
      privacy = await startReceiver();
    });
    after(async () => {
      await all.close();
      await orders.close();
      await privacy.close();
    });

    test('a filtered call makes no delivery row and is counted; removed fields are not sent, and what is sent is signed', async (t) => {
      const onCleanup = cleanups(t);
      const config = testConfig([
        webhooksDestination('all', [all.url]),
        webhooksDestination('orders', [orders.url], {
          filter: { allow: { event: { prefix: 'Order ' } }, drop: { field: 'properties.test', equals: true } },
        }),
        webhooksDestination('privacy', [privacy.url], {
          removeFields: ['properties.email', 'traits.email', 'traits.phone', 'context.ip'],
          settings: { standardWebhooks: { secrets: [whsecret] } },
        }),
      ]);
      const { server, rows } = await startFerryOn(kind, config, {}, onCleanup);

      const res = await server.send('/v1/batch', batch);
      assert.equal(res.status, 200);
      await all.waitFor(4);
      await orders.waitFor(1);
      await privacy.waitFor(4);
      await server.settled();

      const byDestination = await rows(`SELECT destination_id, message_id FROM deliveries ORDER BY destination_id, message_id`);
      assert.deepEqual(
        byDestination.map((r) => `${r['destination_id']} ${r['message_id']}`),
        ['all m-1', 'all m-2', 'all m-3', 'all m-4', 'orders m-1', 'privacy m-1', 'privacy m-2', 'privacy m-3', 'privacy m-4'],
      );
      assert.deepEqual(
        orders.requests.map((r) => r.json.messageId),
        ['m-1'],
      );

      // Counted: three calls dropped for `orders` (two by allow, one by drop), none for the others.
      const scraped = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } });
      const metrics = parsePrometheus(await scraped.text());
      assert.equal(metrics.types.get('ferry_delivery_filtered_total'), 'counter');
      assert.equal(metrics.value('ferry_delivery_filtered_total', { destination: 'orders' }), 3);
      assert.equal(metrics.value('ferry_delivery_filtered_total', { destination: 'all' }), undefined);
      const stats = await server.admin('GET', '/destinations/orders/stats');
      assert.equal(stats.status, 200);
      assert.equal(stats.json.windows['5m'].filtered, 3);
      assert.equal(stats.json.windows['1h'].filtered, 3);
      assert.equal(stats.json.windows['5m'].attempts, 1);
      assert.equal((await server.admin('GET', '/destinations/all/stats')).json.windows['5m'].filtered, 0);

      // Removed fields are not in the body sent, which is what is signed.
      const identify = privacy.requests.find((r) => r.json.type === 'identify')!;
      assert.deepEqual(identify.json.traits, { name: 'Ada' });
      assert.equal(Object.hasOwn(identify.json.context, 'ip'), false);
      const order = privacy.requests.find((r) => r.json.messageId === 'm-1')!;
      assert.deepEqual(order.json.properties, { total: 120 });
      for (const r of privacy.requests) {
        assert.equal(r.body.includes('a@example.com'), false, 'no email in any byte sent');
        assert.ok(verifySignature(r.body, r.headers['x-signature'] as string, secret));
        assert.equal(r.headers['x-signature'], createHmac('sha1', secret).update(r.body).digest('hex'));
        const sentAtMs = Number(r.headers['webhook-timestamp']) * 1000;
        assert.ok(referenceVerifies(whsecret, r.body, r.headers, sentAtMs), 'the standardwebhooks package accepts the stripped body');
      }
      // The other destinations, and the stored event, keep every field.
      assert.equal(all.requests.find((r) => r.json.type === 'identify')!.json.traits.email, 'a@example.com');
      const stored = await rows(`SELECT json FROM events WHERE message_id = 'm-4'`);
      assert.equal(JSON.parse(String(stored[0]!['json'])).traits.email, 'a@example.com');

      // A batch sent again stores nothing new, and its calls are routed, and counted, again.
      assert.equal((await server.send('/v1/batch', batch)).status, 200);
      const again = parsePrometheus(await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } })).text());
      assert.equal(again.value('ferry_delivery_filtered_total', { destination: 'orders' }), 6);
    });

    test('the admin API refuses a bad filter with its path, and a filter set or removed applies to the next calls', async (t) => {
      const onCleanup = cleanups(t);
      const { server, rows } = await startFerryOn(kind, testConfig([webhooksDestination('orders', [orders.url])]), {}, onCleanup);
      const before = orders.requests.length;

      const bad = await server.admin('POST', '/destinations', {
        ...webhooksDestination('more', [orders.url]),
        filter: { allow: { all: [{ type: 'track' }, { event: 'A' }, { field: 'properties.total', gt: 'ten' }] } },
      });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.errors[0].code, 'invalid_settings');
      assert.equal(bad.json.errors[0].path, 'filter.allow.all[2].gt');
      assert.match(bad.json.errors[0].message, /^filter\.allow\.all\[2\]\.gt: must be a number/);
      const badPatch = await server.admin('PATCH', '/destinations/orders', { filter: { allow: { type: 'trak' } } });
      assert.equal(badPatch.status, 400);
      assert.equal(badPatch.json.errors[0].path, 'filter.allow.type');
      const badRemoval = await server.admin('PATCH', '/destinations/orders', { removeFields: ['traits'] });
      assert.equal(badRemoval.status, 400);
      assert.equal(badRemoval.json.errors[0].path, 'removeFields[0]');

      const first = await server.admin('PATCH', '/destinations/orders', { filter: { allow: { event: 'A' }, drop: { type: 'page' } } });
      assert.equal(first.status, 200);
      // A patch's filter replaces the stored one whole: merged, allow would hold event and type.
      const filter = { allow: { type: 'identify' } };
      const patched = await server.admin('PATCH', '/destinations/orders', { filter, removeFields: ['traits.email'] });
      assert.equal(patched.status, 200);
      assert.deepEqual(patched.json.filter, filter);
      assert.deepEqual(patched.json.removeFields, ['traits.email']);
      assert.deepEqual((await server.admin('GET', '/destinations/orders')).json.filter, filter);

      assert.equal((await server.send('/v1/batch', batch)).status, 200);
      await orders.waitFor(before + 1);
      await server.settled();
      assert.deepEqual(
        (await rows(`SELECT message_id FROM deliveries WHERE destination_id = 'orders'`)).map((r) => r['message_id']),
        ['m-4'],
      );
      assert.deepEqual(orders.requests[before]!.json.traits, { phone: '+100', name: 'Ada' });

      // A merge patch's null takes the filter out: every call goes again.
      const cleared = await server.admin('PATCH', '/destinations/orders', { filter: null });
      assert.equal(cleared.status, 200);
      assert.equal(Object.hasOwn(cleared.json, 'filter'), false);
      assert.equal((await server.send('/v1/track', { userId: 'u2', event: 'Signed Up', messageId: 'm-9' })).status, 200);
      await orders.waitFor(before + 2);
      assert.equal(orders.requests[before + 1]!.json.messageId, 'm-9');

      // Deletion notices are not filtered: a filter that allows only identify calls still gets one.
      assert.equal((await server.admin('PATCH', '/destinations/orders', { filter: { allow: { type: 'identify' } } })).status, 200);
      const deletion = await server.admin('POST', '/regulations', { userIds: ['u2'] });
      assert.equal(deletion.status, 202);
      await server.deletionsDone();
      await orders.waitFor(before + 3);
      assert.equal(orders.requests[before + 2]!.json.type, 'delete');
    });
  });
}
