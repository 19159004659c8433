import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Analytics } from '@segment/analytics-node';
import { dedupKey } from '@ferry/webhooks';
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
          settings: {
            webhooks: [
              { url: `${receiver.url}/a`, headers: { 'X-Team': 'growth' } },
              { url: `${second.url}/b`, headers: { 'x-region': 'eu' } },
            ],
          },
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
    assert.equal(got!.headers['x-ferry-source'], 'app');
  });

  test('header names go out spelled as the spec spells them, static ones as configured', async () => {
    const from = receiver.requests.length;
    const from2 = second.requests.length;
    await ferry.send('/v1/track', { userId: 'u1', event: 'Spelled' });
    const names = (await receiver.waitFor(from + 1))[from]!.rawHeaders.filter((_, i) => i % 2 === 0);
    const names2 = (await second.waitFor(from2 + 1))[from2]!.rawHeaders.filter((_, i) => i % 2 === 0);
    for (const name of ['Content-Type', 'User-Agent', 'X-Signature', 'X-Ferry-Source']) {
      assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);
      assert.ok(names2.includes(name), `${name} in ${names2.join(', ')}`);
      assert.ok(!names.includes(name.toLowerCase()), `no ${name.toLowerCase()} in ${names.join(', ')}`);
    }
    assert.ok(names.includes('X-Team'), names.join(', '));
    assert.ok(names2.includes('x-region'), names2.join(', '));
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
    const types = all
      .slice(before)
      .map((r) => r.json.type)
      .sort();
    assert.deepEqual(types, ['alias', 'group', 'identify', 'page', 'screen', 'track']);
    const alias = all.slice(before).find((r) => r.json.type === 'alias')!.json;
    assert.equal(alias['Previous ID'], 'anon-9');
    assert.equal(alias['User ID'], 'seg-1');
    assert.equal(alias.userId, undefined);
  });
});

describe('two sources feeding one destination', () => {
  let receiver: TestReceiver;
  let ferry: TestFerry;

  before(async () => {
    receiver = await startReceiver();
    ferry = await startFerry(
      testConfig([webhooksDestination('shared', [receiver.url], { sources: ['app', 'other'] }), webhooksDestination('app-only', [`${receiver.url}/app-only`])]),
    );
  });
  after(async () => {
    await ferry.stop();
    await receiver.close();
  });

  const arrivals = (path: string) => receiver.requests.filter((r) => r.path === path);

  test('the same messageId from each source arrives twice, told apart by X-Ferry-Source', async () => {
    assert.equal((await ferry.send('/v1/track', { userId: 'u1', event: 'Paid', messageId: 'same-id', properties: { by: 'app' } })).status, 200);
    const other = await ferry.send(
      '/v1/track',
      { userId: 'u1', event: 'Paid', messageId: 'same-id', properties: { by: 'other' } },
      { writeKey: 'other-write-key' },
    );
    assert.equal(other.status, 200);
    // Two for the shared destination, one for the destination of `app` alone.
    await receiver.waitFor(3);
    const shared = arrivals('/');
    assert.equal(shared.length, 2);
    const bySource = Object.fromEntries(shared.map((r) => [r.headers['x-ferry-source'], r]));
    assert.deepEqual(Object.keys(bySource).sort(), ['app', 'other']);
    assert.equal(bySource['app']!.json.properties.by, 'app');
    assert.equal(bySource['other']!.json.properties.by, 'other');
    for (const r of shared) {
      assert.equal(r.json.messageId, 'same-id');
      assert.equal(r.headers['x-signature'], createHmac('sha1', secret).update(r.body).digest('hex'), 'X-Signature covers the body alone');
    }
    assert.deepEqual(shared.map((r) => dedupKey(r.headers, r.json)).sort(), ['app/same-id', 'other/same-id']);
  });

  test('a deletion notice names the affected source', async () => {
    const from = receiver.requests.length;
    const res = await ferry.admin('POST', '/regulations', { userIds: ['u-gone'], sourceIds: ['app'] });
    assert.equal(res.status, 202);
    await receiver.waitFor(from + 2);
    const notices = receiver.requests.slice(from);
    assert.deepEqual(
      notices.map((r) => r.json.type),
      ['delete', 'delete'],
    );
    assert.deepEqual(
      notices.map((r) => r.headers['x-ferry-source']),
      ['app', 'app'],
    );
    const [notice] = notices;
    assert.equal(dedupKey(notice!.headers, notice!.json), `app/delete:u-gone:${notice!.json.timestamp}`);
  });

  test('an audience identify belongs to no source: ferry:audience', async () => {
    assert.equal((await ferry.send('/v1/identify', { userId: 'u-pro', traits: { plan: 'pro' } })).status, 200);
    await receiver.waitFor(receiver.requests.length + 2);
    const from = receiver.requests.length;
    const created = await ferry.admin('POST', '/audiences', {
      id: 'pro',
      name: 'Pro',
      destinationIds: ['shared'],
      rule: { type: 'trait', trait: 'plan', equals: 'pro' },
    });
    assert.equal(created.status, 201);
    const [identify] = (await receiver.waitFor(from + 1)).slice(from);
    assert.deepEqual(identify!.json.traits, { pro: true });
    assert.equal(identify!.headers['x-ferry-source'], 'ferry:audience');
    assert.equal(dedupKey(identify!.headers, identify!.json), `ferry:audience/${identify!.json.messageId}`);
  });
});
