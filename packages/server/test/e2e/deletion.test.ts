import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Store } from '../../src/store/store.js';
import { ManualClock } from '../../src/util/clock.js';
import { startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { openFreshPgStore, stopPostgres } from '../helpers/postgres.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';

after(() => stopPostgres());

describe('deletion requests (regulations)', () => {
  let receiver: TestReceiver;
  let offReceiver: TestReceiver;
  let ferry: TestFerry;
  const clock = new ManualClock(Date.parse('2026-05-05T05:05:05.555Z'));

  before(async () => {
    receiver = await startReceiver({ status: 500 });
    offReceiver = await startReceiver();
    ferry = await startFerry(
      testConfig([
        webhooksDestination('hooks', [receiver.url], { sources: ['app', 'other'] }),
        webhooksDestination('off', [offReceiver.url], { enabled: false }),
      ]),
      { clock, deliver: false },
    );
  });
  after(async () => {
    await ferry.stop();
    await receiver.close();
    await offReceiver.close();
  });

  test('purges the users’ events and pending deliveries, then sends one delete body per enabled destination', async () => {
    await ferry.send('/v1/batch', {
      batch: [
        { type: 'track', userId: 'gone', event: 'A', messageId: 'g1' },
        { type: 'identify', userId: 'gone', traits: { email: 'x@example.com' }, messageId: 'g2' },
        { type: 'track', userId: 'kept', event: 'A', messageId: 'k1' },
      ],
    });
    // A failed first attempt leaves the deliveries pending, as they would be in a backlog.
    await ferry.idle();
    const before = (await ferry.admin('GET', '/stats')).json;
    assert.equal(before.events, 3);

    const res = await ferry.admin('POST', '/regulations', { userIds: ['gone'] });
    assert.equal(res.status, 202);
    assert.match(res.json.id, /^reg_/);
    await ferry.deletionsDone();

    const status = await ferry.admin('GET', `/regulations/${res.json.id}`);
    assert.equal(status.json.status, 'done');
    assert.equal(status.json.eventsDeleted, 2);
    assert.equal(status.json.deliveriesDeleted, 2);
    assert.equal(status.json.notificationsQueued, 1, 'one notice for the one enabled destination');

    assert.equal((await ferry.admin('GET', '/stats')).json.events, 1);
    assert.equal((await ferry.admin('GET', '/deliveries?messageId=g1')).json.deliveries.length, 0);
    assert.equal((await ferry.admin('GET', '/deliveries?messageId=k1')).json.deliveries.length, 1);

    receiver.reply({ status: 200 });
    receiver.requests.length = 0;
    await ferry.idle();
    const deletes = receiver.requests.filter((r) => r.json.type === 'delete');
    assert.equal(deletes.length, 1);
    assert.equal(deletes[0]!.body.toString(), '{"type":"delete","userId":"gone","timestamp":"2026-05-05T05:05:05.555Z"}');
    assert.ok(deletes[0]!.headers['x-signature'], 'delete notices are signed too');
    assert.equal(offReceiver.requests.length, 0, 'a disabled destination is not notified');
  });

  test('a request limited to sources leaves the user’s data in other sources alone', async () => {
    await ferry.send('/v1/track', { userId: 'split', event: 'A', messageId: 's-app' });
    await ferry.send('/v1/track', { userId: 'split', event: 'A', messageId: 's-other' }, { writeKey: 'other-write-key' });
    const res = await ferry.admin('POST', '/regulations', { userIds: ['split'], sourceIds: ['other'] });
    assert.equal(res.status, 202);
    await ferry.deletionsDone();
    assert.equal((await ferry.admin('GET', `/regulations/${res.json.id}`)).json.eventsDeleted, 1);
    assert.equal((await ferry.admin('GET', '/deliveries?messageId=s-app')).json.deliveries.length, 1);
    assert.equal((await ferry.admin('GET', '/deliveries?messageId=s-other')).json.deliveries.length, 0);
  });

  test('bad requests are refused with a stable code', async () => {
    // A misspelt key is refused, never read as "every source".
    for (const body of [{}, { userIds: [] }, { userIds: [1] }, { userIds: ['a'], sourceIds: 'app' }, { userIds: ['a'], sourceId: ['app'] }, []]) {
      const res = await ferry.admin('POST', '/regulations', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.json.success, false);
    }
    const unknown = await ferry.admin('POST', '/regulations', { userIds: ['a'], sourceIds: ['nope'] });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.json.errors[0].code, 'invalid_settings');
    assert.equal((await ferry.admin('GET', '/regulations/reg_missing')).status, 404);
  });
});

/** Each store: none given means SQLite in the Ferry's data directory. */
const backends: { name: string; open: () => Promise<{ store?: Store; cleanup: () => Promise<void> }> }[] = [
  { name: 'sqlite', open: async () => ({ cleanup: async () => {} }) },
  { name: 'postgres', open: () => openFreshPgStore() },
];

for (const backend of backends) {
  describe(`deletion notices go only where the user was (${backend.name})`, () => {
    let receiver: TestReceiver;
    let ferry: TestFerry;
    let cleanup: () => Promise<void>;

    before(async () => {
      const opened = await backend.open();
      cleanup = opened.cleanup;
      receiver = await startReceiver();
      ferry = await startFerry(
        testConfig([
          webhooksDestination('app-hooks', [`${receiver.url}/app`], { sources: ['app'] }),
          webhooksDestination('other-hooks', [`${receiver.url}/other`], { sources: ['other'] }),
        ]),
        { deliver: false, ...(opened.store ? { store: opened.store } : {}) },
      );
    });
    after(async () => {
      await ferry.stop();
      await receiver.close();
      await cleanup();
    });

    /** Carries out a request and returns the paths its notices were delivered to, sorted. */
    async function noticesOf(request: { userIds: string[]; sourceIds?: string[] }): Promise<string[]> {
      const res = await ferry.admin('POST', '/regulations', request);
      assert.equal(res.status, 202);
      await ferry.deletionsDone();
      const before = receiver.requests.length;
      await ferry.idle();
      const got = receiver.requests.slice(before);
      assert.ok(got.every((r) => r.json.type === 'delete'));
      return got.map((r) => `${r.path} ${r.json.userId}`).sort();
    }

    test("without sourceIds, only the destinations of the sources that held the user's events are told", async () => {
      await ferry.send('/v1/track', { userId: 'in-app', event: 'A' });
      await ferry.idle();
      assert.deepEqual(await noticesOf({ userIds: ['in-app'] }), ['/app in-app'], 'the other source never saw the user');
    });

    test('without sourceIds, a user Ferry holds nothing of is not named to anyone', async () => {
      assert.deepEqual(await noticesOf({ userIds: ['unknown'] }), []);
    });

    test('a source the request names is told even if it held nothing of the user', async () => {
      await ferry.send('/v1/track', { userId: 'named', event: 'A' });
      await ferry.idle();
      assert.deepEqual(await noticesOf({ userIds: ['named'], sourceIds: ['app', 'other'] }), ['/app named', '/other named']);
      assert.deepEqual(await noticesOf({ userIds: ['never-seen'], sourceIds: ['other'] }), ['/other never-seen']);
    });

    test("a source that held only the user's anonymous events before login is told too", async () => {
      await ferry.send('/v1/track', { anonymousId: 'anon-7', event: 'Viewed' }, { writeKey: 'other-write-key' });
      await ferry.send('/v1/identify', { userId: 'logged-in', anonymousId: 'anon-7' });
      await ferry.idle();
      assert.deepEqual(await noticesOf({ userIds: ['logged-in'] }), ['/app logged-in', '/other logged-in']);
    });
  });
}
