import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Analytics } from '@segment/analytics-node';
import { startFerry, testConfig, webhooksDestination, secret, writeKey, type TestFerry } from '../helpers/ferry.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';

describe('a call travels from ingestion to every webhook URL', () => {
  let receiver: TestReceiver;
  let second: TestReceiver;
  let ferry: TestFerry;

  before(async () => {
    receiver = await startReceiver();
    second = await startReceiver();
    ferry = await startFerry(
      testConfig([
        webhooksDestination('hooks', [`${receiver.url}/a`, `${second.url}/b`], {
          settings: { webhooks: [{ url: `${receiver.url}/a`, headers: { 'X-Team': 'growth' } }, { url: `${second.url}/b` }] },
        }),
      ]),
    );
  });
  after(async () => {
    await ferry.stop();
    await receiver.close();
    await second.close();
  });

  test('a track call arrives signed, with the spec headers, at each URL', async () => {
    const res = await ferry.send('/v1/track', { userId: 'u1', event: 'Signed Up', properties: { plan: 'pro' }, messageId: 'm-1' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { success: true });
    const [got] = await receiver.waitFor(1);
    const [got2] = await second.waitFor(1);
    assert.equal(got!.path, '/a');
    assert.equal(got2!.path, '/b');
    assert.equal(got!.headers['content-type'], 'application/json');
    assert.match(got!.headers['user-agent']!, /^Ferry\/\d+\.\d+\.\d+/);
    assert.equal(got!.headers['x-team'], 'growth');
    assert.equal(got2!.headers['x-team'], undefined);
    const expected = createHmac('sha1', secret).update(got!.body).digest('hex');
    assert.equal(got!.headers['x-signature'], expected);
    assert.equal(got!.json.type, 'track');
    assert.equal(got!.json.version, 1);
    assert.equal(got!.json.event, 'Signed Up');
    assert.equal(got!.json.messageId, 'm-1');
    assert.deepEqual(got!.json.properties, { plan: 'pro' });
    assert.match(got!.json.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(got!.body.toString(), got2!.body.toString());
  });

  test('@segment/analytics-node pointed at Ferry delivers every call type', async () => {
    const before = receiver.requests.length;
    const client = new Analytics({ writeKey, host: ferry.url, flushAt: 6, maxEventsInBatch: 6 } as any);
    client.identify({ userId: 'seg-1', traits: { email: 'a@example.com' } });
    client.track({ userId: 'seg-1', event: 'Clicked', properties: { button: 'buy' } });
    client.page({ userId: 'seg-1', name: 'Home', category: 'Docs', properties: { path: '/home', url: 'https://example.com/home' } });
    client.screen({ userId: 'seg-1', name: 'Settings', properties: { tab: 'privacy' } });
    client.group({ userId: 'seg-1', groupId: 'g-1', traits: { plan: 'enterprise' } });
    client.alias({ userId: 'seg-1', previousId: 'anon-9' });
    await client.closeAndFlush({ timeout: 10_000 });
    const all = await receiver.waitFor(before + 6);
    const types = all.slice(before).map((r) => r.json.type).sort();
    assert.deepEqual(types, ['alias', 'group', 'identify', 'page', 'screen', 'track']);
    const alias = all.slice(before).find((r) => r.json.type === 'alias')!.json;
    assert.equal(alias['Previous ID'], 'anon-9');
    assert.equal(alias['User ID'], 'seg-1');
    assert.equal(alias.userId, undefined);
  });
});
