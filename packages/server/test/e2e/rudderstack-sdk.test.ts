/**
 * The real RudderStack Node SDK (`@rudderstack/rudder-sdk-node` 3.x) pointed at Ferry. It posts
 * gzipped JSON labelled `Content-Type: application/x-www-form-urlencoded` (its HTTP library's
 * default for a Buffer body); Ferry must read it as JSON and deliver every call.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { ClientRequest } from 'node:http';
import { after, test } from 'node:test';
import RudderAnalytics from '@rudderstack/rudder-sdk-node';
import { secret, startFerry, testConfig, webhooksDestination, writeKey } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';

test('@rudderstack/rudder-sdk-node -> Ferry -> webhook receiver: its form-labelled gzip batches are read as JSON and every call arrives', async () => {
  const receiver = await startReceiver();
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', [receiver.url])]));
  // What the SDK really puts on the wire, seen through Node's own HTTP client.
  const sent: { host: string; contentType: unknown; contentEncoding: unknown }[] = [];
  const onRequest = (message: unknown) => {
    const request = (message as { request: ClientRequest }).request;
    sent.push({ host: request.host, contentType: request.getHeader('content-type'), contentEncoding: request.getHeader('content-encoding') });
  };
  subscribe('http.client.request.start', onRequest);
  after(async () => {
    unsubscribe('http.client.request.start', onRequest);
    await ferry.stop();
    await receiver.close();
  });

  const client = new RudderAnalytics(writeKey, {
    dataPlaneUrl: ferry.url,
    flushAt: 20,
    logLevel: 'error',
    // No proxy from the environment: the SDK talks to the loopback server directly.
    axiosConfig: { proxy: false },
    retryCount: 0,
  });
  const at = new Date('2026-04-01T10:00:00.000Z');
  // Message ids are not in the SDK's types, but it keeps one it is given.
  const withId = <T>(message: T, messageId: string) => ({ ...message, messageId }) as T;
  client.identify(withId({ userId: 'r1', traits: { email: 'r1@example.com' }, timestamp: at }, 'r-identify'));
  client.track(withId({ userId: 'r1', event: 'Order Completed', properties: { revenue: 42 }, timestamp: at }, 'r-track'));
  client.page(withId({ userId: 'r1', name: 'Pricing', category: 'Marketing', properties: { path: '/pricing' } }, 'r-page'));
  client.screen(withId({ userId: 'r1', name: 'Home', properties: { tab: 'a' } }, 'r-screen'));
  client.group(withId({ userId: 'r1', groupId: 'acme', traits: { plan: 'enterprise' } }, 'r-group'));
  client.alias(withId({ userId: 'r1', previousId: 'anon-1' }, 'r-alias'));
  client.track(withId({ userId: 'r1', event: 'Not for webhooks', integrations: { Webhooks: false } }, 'r-skipped'));
  // flush() rejects when Ferry refuses a batch; it also clears the SDK's flush timer, so the test ends.
  await client.flush();

  assert.ok(sent.length >= 2, `the SDK sent ${sent.length} requests`);
  for (const s of sent) {
    assert.equal(s.host, '127.0.0.1', 'the SDK sends only to the loopback server');
    assert.equal(s.contentType, 'application/x-www-form-urlencoded', 'the SDK still labels its JSON as a form');
    assert.equal(s.contentEncoding, 'gzip');
  }

  const got = await receiver.waitFor(6);
  const byId = new Map(got.map((r) => [r.json.messageId as string, r]));
  for (const r of got) assert.equal(r.headers['x-signature'], createHmac('sha1', secret).update(r.body).digest('hex'));
  const body = (id: string) => {
    assert.ok(byId.has(id), `${id} arrived`);
    return byId.get(id)!.json;
  };
  assert.equal(body('r-identify').userId, 'r1');
  assert.deepEqual(body('r-identify').traits, { email: 'r1@example.com' });
  assert.equal(body('r-track').event, 'Order Completed');
  assert.deepEqual(body('r-track').properties, { revenue: 42 });
  // RudderStack sends the event time as originalTimestamp; Ferry uses it as the client's time.
  assert.ok(Math.abs(Date.parse(body('r-track').timestamp) - at.getTime()) < 60_000);
  assert.equal(body('r-track').context.library.name, 'analytics-node');
  assert.equal(body('r-page').name, 'Pricing');
  assert.equal(body('r-page').category, 'Marketing');
  assert.equal(body('r-screen').name, 'Home');
  assert.equal(body('r-group').groupId, 'acme');
  assert.equal(body('r-alias')['Previous ID'], 'anon-1');
  assert.equal(body('r-alias')['User ID'], 'r1');

  // The seventh call was stored, not rejected, and not routed: judged on what Ferry holds.
  const stats = (await ferry.admin('GET', '/stats')).json;
  assert.equal(stats.events, 7);
  assert.equal(stats.rejections, 0);
  assert.equal((await ferry.admin('GET', '/deliveries?messageId=r-skipped')).json.deliveries.length, 0);
  assert.equal((await ferry.admin('GET', '/deliveries?messageId=r-track')).json.deliveries.length, 1);
});
