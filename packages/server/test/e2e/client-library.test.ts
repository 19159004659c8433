import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, test } from 'node:test';
import { Analytics } from '@ferry/analytics';
import { secret, startFerry, testConfig, webhooksDestination, writeKey } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';

test('@ferry/analytics -> Ferry -> webhook receiver: every call type arrives as its spec body, signed', async () => {
  const receiver = await startReceiver();
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', [receiver.url])]));
  after(async () => {
    await ferry.stop();
    await receiver.close();
  });
  const analytics = new Analytics(writeKey, { endpoint: ferry.url, flushAt: 3, gzip: true });
  const at = '2026-04-01T10:00:00.000Z';
  analytics.identify({ userId: 'u1', traits: { email: 'u1@example.com' }, timestamp: at, messageId: 'c-identify' });
  analytics.track({ userId: 'u1', event: 'Order Completed', properties: { revenue: 42 }, timestamp: at, messageId: 'c-track' });
  analytics.page({
    userId: 'u1',
    name: 'Pricing',
    category: 'Marketing',
    properties: { path: '/pricing', url: 'https://example.com/pricing', title: 'Pricing', referrer: '' },
    timestamp: at,
    messageId: 'c-page',
  });
  analytics.screen({
    userId: 'u1',
    name: 'Home',
    properties: { tab: 'a' },
    context: { device: { model: 'X1', type: 'ios' } },
    timestamp: at,
    messageId: 'c-screen',
  });
  analytics.group({ userId: 'u1', groupId: 'acme', traits: { plan: 'enterprise' }, timestamp: at, messageId: 'c-group' });
  analytics.alias({ userId: 'u1', previousId: 'anon-1', timestamp: at, messageId: 'c-alias' });
  analytics.track({ userId: 'u1', event: 'Not for webhooks', integrations: { Webhooks: false }, messageId: 'c-skipped' });
  const result = await analytics.close({ timeout: 10_000 });
  assert.equal(result.status, 'complete');
  assert.equal(result.failed.length, 0);

  const got = await receiver.waitFor(6);
  const byId = new Map(got.map((r) => [r.json.messageId as string, r]));
  // The skipped call is judged on what Ferry stored, not on what has not arrived yet: it was
  // accepted (stored, not rejected) and no delivery was queued for it.
  const stats = (await ferry.admin('GET', '/stats')).json;
  assert.equal(stats.events, 7, 'all seven calls were stored');
  assert.equal(stats.rejections, 0, 'none was rejected');
  assert.equal((await ferry.admin('GET', '/deliveries?messageId=c-skipped')).json.deliveries.length, 0, 'the integrations map was honoured');
  assert.equal((await ferry.admin('GET', '/deliveries?messageId=c-track')).json.deliveries.length, 1);
  for (const r of got) assert.equal(r.headers['x-signature'], createHmac('sha1', secret).update(r.body).digest('hex'));

  const body = (id: string) => byId.get(id)!.json;
  const context = body('c-track').context;
  assert.equal(context.library.name, '@ferry/analytics');
  assert.equal(context.ip, '127.0.0.1');
  assert.deepEqual(Object.keys(body('c-track')), ['version', 'type', 'userId', 'messageId', 'timestamp', 'context', 'event', 'properties']);
  assert.equal(body('c-track').event, 'Order Completed');
  assert.deepEqual(body('c-track').properties, { revenue: 42 });
  assert.deepEqual(body('c-identify').traits, { email: 'u1@example.com' });
  assert.equal(body('c-page').name, 'Pricing');
  assert.equal(body('c-page').category, 'Marketing');
  assert.equal(body('c-page').properties.path, '/pricing');
  assert.equal(body('c-screen').name, 'Home');
  assert.deepEqual(body('c-screen').context.device, { model: 'X1', type: 'ios' });
  assert.equal(body('c-group').groupId, 'acme');
  assert.deepEqual(body('c-group').traits, { plan: 'enterprise' });
  assert.equal(body('c-alias')['Previous ID'], 'anon-1');
  assert.equal(body('c-alias')['User ID'], 'u1');
  // The client's clock and the server's agree here, so the corrected timestamp is the client's own.
  assert.ok(Math.abs(Date.parse(body('c-track').timestamp) - Date.parse(at)) < 60_000);
});
