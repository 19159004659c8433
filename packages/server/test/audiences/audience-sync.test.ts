import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { AudienceSync } from '../../src/audiences/audience-sync.js';
import { SqliteAudienceStore } from '../../src/store/sqlite/sqlite-audience-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { adminToken, secret, startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { startReceiver, type Received, type TestReceiver } from '../helpers/receiver.js';

const dayMs = 86_400_000;
// A day (the schema's maximum): the loop never fires on its own inside a test that drives syncs by hand.
const handDriven = { audiences: { syncIntervalMs: dayMs } };

/** A Ferry whose worker and sync loop are driven by hand, two destinations (one disabled) on one receiver. */
async function setup(): Promise<{ ferry: TestFerry; receiver: TestReceiver; clock: ManualClock; sync: AudienceSync }> {
  const receiver = await startReceiver();
  const clock = new ManualClock();
  const ferry = await startFerry(
    testConfig(
      [
        // Connected to no source: they receive audience identifies only, never the ingested calls.
        webhooksDestination('hooks', [`${receiver.url}/hooks`], { sources: [] }),
        webhooksDestination('off', [`${receiver.url}/off`], { sources: [], enabled: false }),
      ],
      handDriven,
    ),
    { clock, deliver: false },
  );
  assert.ok(ferry.ferry.audiences, 'the SQLite store comes with audiences');
  return { ferry, receiver, clock, sync: ferry.ferry.audiences };
}

/** Sends every due job and returns the requests that arrived meanwhile; nothing is due afterwards. */
async function deliver(ferry: TestFerry, receiver: TestReceiver): Promise<Received[]> {
  const before = receiver.requests.length;
  await ferry.ferry.worker.runUntilIdle();
  return receiver.requests.slice(before);
}

let seq = 0;
async function ingest(ferry: TestFerry, batch: Record<string, unknown>[], writeKey?: string): Promise<void> {
  const res = await ferry.send('/v1/batch', { batch: batch.map((m) => ({ messageId: `m-${++seq}`, ...m })) }, writeKey ? { writeKey } : {});
  assert.equal(res.status, 200);
  assert.equal(res.json.rejected, undefined);
}
const identify = (userId: string, traits: Record<string, unknown>) => ({ type: 'identify', userId, traits });
const track = (userId: string, event: string) => ({ type: 'track', userId, event });

/** `userId -> trait value` of the identify calls received, for one trait key. */
function traitsByUser(requests: Received[], key: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const r of requests) {
    assert.equal(r.json.type, 'identify');
    assert.deepEqual(Object.keys(r.json.traits), [key]);
    out[r.json.userId as string] = r.json.traits[key];
  }
  return out;
}

describe('audiences synced to a Webhooks destination as identify calls', () => {
  let t: Awaited<ReturnType<typeof setup>>;
  before(async () => {
    t = await setup();
  });
  after(async () => {
    await t.ferry.stop();
    await t.receiver.close();
  });

  test('creating an audience sends one identify per current member, with exactly the identify body', async () => {
    const { ferry, receiver, clock } = t;
    await ingest(ferry, [
      identify('u1', { plan: 'pro', email: 'u1@example.com' }),
      identify('u2', { plan: 'pro' }),
      identify('u3', { plan: 'free' }),
      // No userId: profiles are keyed by userId, so an anonymous identify never counts.
      { type: 'identify', anonymousId: 'anon-1', traits: { plan: 'pro' } },
      // A number or boolean is not the string "pro".
      identify('u5', { plan: 1 }),
    ]);
    const created = await ferry.admin('POST', '/audiences', {
      id: 'pro-users',
      name: 'Pro Users',
      destinationIds: ['hooks', 'off'],
      rule: { type: 'trait', trait: 'plan', equals: 'pro' },
    });
    assert.equal(created.status, 201);
    assert.equal(created.json.trait, 'pro_users');
    assert.equal(created.json.memberCount, 2);
    assert.equal(created.json.syncCount, 1);
    assert.deepEqual(
      { added: created.json.sync.added, removed: created.json.sync.removed, queued: created.json.sync.queued },
      { added: 2, removed: 0, queued: 2 },
      'two members, queued only for the enabled destination',
    );

    const got = await deliver(ferry, receiver);
    assert.deepEqual(got.map((r) => r.path), ['/hooks', '/hooks'], 'the disabled destination gets nothing');
    const u1 = got.find((r) => r.json.userId === 'u1')!;
    assert.deepEqual(Object.keys(u1.json), ['version', 'type', 'userId', 'messageId', 'timestamp', 'context', 'traits']);
    assert.deepEqual(u1.json, {
      version: 1,
      type: 'identify',
      userId: 'u1',
      messageId: u1.json.messageId,
      timestamp: new Date(clock.now()).toISOString(),
      context: {},
      traits: { pro_users: true },
    });
    assert.match(u1.json.messageId, /^aud_[0-9a-f]{32}$/);
    assert.equal(u1.headers['x-signature'], createHmac('sha1', secret).update(u1.body).digest('hex'), 'signed like any webhook');
    assert.deepEqual(traitsByUser(got, 'pro_users'), { u1: true, u2: true });
    assert.notEqual(got[0]!.json.messageId, got[1]!.json.messageId, 'each change has its own messageId');
  });

  test('a sync with nothing changed sends nothing', async () => {
    const { ferry, receiver, sync, clock } = t;
    clock.advance(60_000);
    const [outcome] = (await sync.syncAll()).filter((o) => o.id === 'pro-users');
    assert.deepEqual({ ...outcome, syncedAtMs: 0 }, { id: 'pro-users', syncCount: 2, syncedAtMs: 0, added: 0, removed: 0, changed: 0, forgotten: 0, queued: 0, memberCount: 2 });
    assert.deepEqual(await deliver(ferry, receiver), []);
  });

  test('a new qualifying user is sent alone, as true', async () => {
    const { ferry, receiver, sync } = t;
    await ingest(ferry, [identify('u4', { plan: 'pro' }), identify('u3', { email: 'u3@example.com' })]);
    const outcome = await sync.sync('pro-users');
    assert.equal(outcome?.added, 1);
    assert.deepEqual(traitsByUser(await deliver(ferry, receiver), 'pro_users'), { u4: true });
  });

  test('a user whose trait changed is sent as false; an identify without the trait keeps the member', async () => {
    const { ferry, receiver, sync } = t;
    await ingest(ferry, [identify('u1', { plan: 'free' }), identify('u2', { email: 'new@example.com' })]);
    const outcome = await sync.sync('pro-users');
    assert.deepEqual([outcome?.added, outcome?.removed], [0, 1]);
    assert.deepEqual(traitsByUser(await deliver(ferry, receiver), 'pro_users'), { u1: false });

    const shown = await ferry.admin('GET', '/audiences/pro-users');
    assert.equal(shown.status, 200);
    assert.equal(shown.json.memberCount, 2, 'u2 and u4');
    assert.equal(shown.json.syncCount, 4);
    assert.equal(shown.json.lastSyncedAt, new Date(t.clock.now()).toISOString());
    assert.deepEqual(shown.json.rule, { type: 'trait', trait: 'plan', equals: 'pro' });
    assert.deepEqual(shown.json.sourceIds, null);
  });

  test('a user who qualifies again is sent true again', async () => {
    const { ferry, receiver, sync } = t;
    await ingest(ferry, [identify('u1', { plan: 'pro' })]);
    await sync.sync('pro-users');
    assert.deepEqual(traitsByUser(await deliver(ferry, receiver), 'pro_users'), { u1: true });
  });

  test('a destination turned on receives the changes made from then on, not the backlog', async () => {
    const { ferry, receiver, sync } = t;
    const enabled = await ferry.admin('PATCH', '/destinations/off', { enabled: true });
    assert.equal(enabled.status, 200);
    await ingest(ferry, [identify('u6', { plan: 'pro' })]);
    assert.equal((await sync.sync('pro-users'))?.queued, 2);
    const got = await deliver(ferry, receiver);
    assert.deepEqual(got.map((r) => `${r.path} ${r.json.userId}`).sort(), ['/hooks u6', '/off u6']);
    assert.equal(got[0]!.json.messageId, got[1]!.json.messageId, 'one change, one messageId, sent to each destination');
    await ferry.admin('PATCH', '/destinations/off', { enabled: false });
  });

  test('a member deleted by a deletion request is forgotten without an identify', async () => {
    const { ferry, receiver, sync } = t;
    const requested = await ferry.admin('POST', '/regulations', { userIds: ['u4'] });
    assert.equal(requested.status, 202);
    await ferry.ferry.regulations.idle();
    const outcome = await sync.sync('pro-users');
    assert.deepEqual([outcome?.removed, outcome?.forgotten, outcome?.queued, outcome?.memberCount], [0, 1, 0, 3]);
    assert.deepEqual(await deliver(ferry, receiver), [], 'no identify recreates the deleted user');
    const db = (ferry.ferry.store as SqliteStore).database;
    assert.equal(db.prepare(`SELECT COUNT(*) AS n FROM audience_members WHERE user_id = 'u4'`).pluck().get(), 0, 'no trace of u4 is kept');
  });

  test('the GET list shows the audience; DELETE removes it and its members', async () => {
    const { ferry } = t;
    const list = await ferry.admin('GET', '/audiences');
    assert.equal(list.status, 200);
    assert.deepEqual(list.json.audiences.map((a: { id: string }) => a.id), ['pro-users']);
    const deleted = await ferry.admin('DELETE', '/audiences/pro-users');
    assert.equal(deleted.status, 204);
    assert.equal((await ferry.admin('GET', '/audiences/pro-users')).status, 404);
    assert.equal((await ferry.admin('POST', '/audiences/pro-users/sync')).status, 404);
    const db = (ferry.ferry.store as SqliteStore).database;
    assert.equal((db.prepare(`SELECT COUNT(*) AS n FROM audience_members WHERE audience_id = 'pro-users'`).get() as { n: number }).n, 0);
  });
});

describe('event rules follow the clock', () => {
  let t: Awaited<ReturnType<typeof setup>>;
  let t0: number;
  before(async () => {
    t = await setup();
    t0 = t.clock.now();
  });
  after(async () => {
    await t.ferry.stop();
    await t.receiver.close();
  });

  test('within N days: members drop out as their events leave the window; minCount and sourceIds count', async () => {
    const { ferry, receiver, clock, sync } = t;
    await ingest(ferry, [track('u1', 'Order Completed'), track('u9', 'Order Viewed')]);
    clock.set(t0 + 3 * dayMs);
    await ingest(ferry, [track('u2', 'Order Completed'), track('u2', 'Order Completed')]);
    // Events of another source do not count for an audience limited to `app`.
    await ingest(ferry, [track('u3', 'Order Completed'), track('u3', 'Order Completed')], 'other-write-key');

    const recent = await ferry.admin('POST', '/audiences', {
      id: 'recent-buyers',
      name: 'Recent Buyers',
      destinationIds: ['hooks'],
      sourceIds: ['app'],
      rule: { type: 'event', event: 'Order Completed', withinDays: 7 },
    });
    assert.equal(recent.status, 201, JSON.stringify(recent.json));
    assert.deepEqual(recent.json.rule, { type: 'event', event: 'Order Completed', minCount: 1, withinDays: 7 });
    const repeat = await ferry.admin('POST', '/audiences', {
      id: 'repeat-buyers',
      name: 'repeatBuyers',
      destinationIds: ['hooks'],
      rule: { type: 'event', event: 'Order Completed', minCount: 2 },
    });
    assert.equal(repeat.status, 201);
    const first = await deliver(ferry, receiver);
    assert.deepEqual(traitsByUser(first.filter((r) => 'recent_buyers' in r.json.traits), 'recent_buyers'), { u1: true, u2: true });
    assert.deepEqual(traitsByUser(first.filter((r) => 'repeat_buyers' in r.json.traits), 'repeat_buyers'), { u2: true, u3: true });

    clock.set(t0 + 7 * dayMs);
    await sync.syncAll();
    assert.deepEqual(await deliver(ferry, receiver), [], 'u1 is exactly 7 days old: still inside the window');

    clock.set(t0 + 7 * dayMs + 1);
    await sync.syncAll();
    const slid = await deliver(ferry, receiver);
    assert.deepEqual(traitsByUser(slid, 'recent_buyers'), { u1: false });
    assert.equal(slid[0]!.json.timestamp, new Date(t0 + 7 * dayMs + 1).toISOString(), 'timestamp is the sync time');

    clock.set(t0 + 11 * dayMs);
    await sync.syncAll();
    assert.deepEqual(traitsByUser(await deliver(ferry, receiver), 'recent_buyers'), { u2: false });
    assert.equal((await ferry.admin('GET', '/audiences/repeat-buyers')).json.memberCount, 2, 'no window: still members');
  });

  test('a computed trait sends the count whenever it changes, and 0 when it leaves the window', async () => {
    const { ferry, receiver, clock, sync } = t;
    const start = clock.now();
    await ingest(ferry, [track('c1', 'Logged In'), track('c1', 'Logged In'), track('c2', 'Logged In')]);
    const created = await ferry.admin('POST', '/computed-traits', {
      id: 'logins-7d',
      name: 'Logins Last 7 Days',
      destinationIds: ['hooks'],
      rule: { type: 'event_count', event: 'Logged In', withinDays: 7 },
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    assert.equal(created.json.kind, 'computed_trait');
    assert.deepEqual(traitsByUser(await deliver(ferry, receiver), 'logins_last_7_days'), { c1: 2, c2: 1 });

    clock.set(start + 2 * dayMs);
    await ingest(ferry, [track('c2', 'Logged In')]);
    const outcome = await sync.sync('logins-7d');
    assert.deepEqual([outcome?.added, outcome?.changed, outcome?.removed], [0, 1, 0]);
    assert.deepEqual(traitsByUser(await deliver(ferry, receiver), 'logins_last_7_days'), { c2: 2 });

    clock.set(start + 8 * dayMs);
    await sync.sync('logins-7d');
    assert.deepEqual(traitsByUser(await deliver(ferry, receiver), 'logins_last_7_days'), { c1: 0, c2: 1 });

    assert.deepEqual((await ferry.admin('GET', '/computed-traits')).json.computedTraits.map((c: { id: string }) => c.id), ['logins-7d']);
    assert.equal((await ferry.admin('GET', '/audiences/logins-7d')).status, 404, 'a computed trait is not an audience');
  });
});

describe('a sync is one transaction', () => {
  let t: Awaited<ReturnType<typeof setup>>;
  before(async () => {
    t = await setup();
  });
  after(async () => {
    await t.ferry.stop();
    await t.receiver.close();
  });

  test('a sync that fails midway queues nothing and keeps the members, so the next sync sends the change once', async () => {
    const { ferry, receiver, clock, sync } = t;
    await ingest(ferry, [identify('a', { vip: true })]);
    const created = await ferry.admin('POST', '/audiences', { id: 'vips', name: 'VIPs', destinationIds: ['hooks'], rule: { type: 'trait', trait: 'vip', equals: true } });
    assert.equal(created.status, 201);
    assert.deepEqual(traitsByUser(await deliver(ferry, receiver), 'vi_ps'), { a: true });

    await ingest(ferry, [identify('b', { vip: true }), identify('c', { vip: true }), identify('a', { vip: false })]);
    let made = 0;
    const failing = new AudienceSync({
      audiences: new SqliteAudienceStore(ferry.ferry.store as SqliteStore),
      catalog: ferry.ferry.catalog,
      clock,
      logger: pino({ level: 'silent' }),
      settings: { syncIntervalMs: dayMs },
      // Fails on the second change, after the first body was built: the kind of fault a crash is.
      newMessageId: () => {
        if (++made === 2) throw new Error('boom');
        return `test-${made}`;
      },
    });
    await assert.rejects(failing.sync('vips'), /boom/);
    const stats = await ferry.ferry.store.stats();
    assert.equal(stats.deliveries.pending, 0, 'nothing of the failed sync was queued');
    assert.equal((await ferry.admin('GET', '/audiences/vips')).json.syncCount, 1, 'the sync count did not move');

    const outcome = await sync.sync('vips');
    assert.deepEqual([outcome?.added, outcome?.removed, outcome?.syncCount], [2, 1, 2]);
    assert.deepEqual(traitsByUser(await deliver(ferry, receiver), 'vi_ps'), { a: false, b: true, c: true });
    assert.equal((await sync.sync('vips'))?.queued, 0);
  });
});

describe('admin API of audiences', () => {
  let t: Awaited<ReturnType<typeof setup>>;
  before(async () => {
    t = await setup();
  });
  after(async () => {
    await t.ferry.stop();
    await t.receiver.close();
  });

  const valid = { id: 'a1', name: 'Power Users', destinationIds: ['hooks'], rule: { type: 'event', event: 'Signed Up' } };
  const cases: { name: string; body: unknown; path: string | undefined; message: RegExp }[] = [
    { name: 'unknown rule type', body: { ...valid, rule: { type: 'sql', query: 'x' } }, path: 'rule.type', message: /^rule\.type: must be "event" or "trait"$/ },
    { name: 'event_count is for computed traits', body: { ...valid, rule: { type: 'event_count', event: 'x' } }, path: 'rule.type', message: /"event" or "trait"/ },
    { name: 'unknown key in a rule', body: { ...valid, rule: { type: 'event', event: 'x', within: 7 } }, path: 'rule.within', message: /unknown key/ },
    { name: 'minCount below 1', body: { ...valid, rule: { type: 'event', event: 'x', minCount: 0 } }, path: 'rule.minCount', message: /at least 1/ },
    { name: 'fractional withinDays', body: { ...valid, rule: { type: 'event', event: 'x', withinDays: 1.5 } }, path: 'rule.withinDays', message: /whole number/ },
    { name: 'trait rule compared with an object', body: { ...valid, rule: { type: 'trait', trait: 'plan', equals: { a: 1 } } }, path: 'rule.equals', message: /string, number, boolean or null/ },
    { name: 'unknown destination', body: { ...valid, destinationIds: ['nope'] }, path: 'destinationIds[0]', message: /unknown destination "nope"/ },
    { name: 'no destination', body: { ...valid, destinationIds: [] }, path: 'destinationIds', message: /at least one destination/ },
    { name: 'unknown source', body: { ...valid, sourceIds: ['nope'] }, path: 'sourceIds[0]', message: /unknown source "nope"/ },
    { name: 'bad id', body: { ...valid, id: 'Power Users' }, path: 'id', message: /\[a-z0-9_-\]\+/ },
    { name: 'name without letters', body: { ...valid, name: '!!!' }, path: 'name', message: /snake_case/ },
    { name: 'unknown top-level key', body: { ...valid, enabled: true }, path: 'enabled', message: /unknown key/ },
  ];
  for (const c of cases) {
    test(`400 invalid_settings: ${c.name}`, async () => {
      const res = await t.ferry.admin('POST', '/audiences', c.body);
      assert.equal(res.status, 400);
      const [error] = res.json.errors;
      assert.equal(error.code, 'invalid_settings');
      assert.equal(error.path, c.path);
      assert.match(error.message, c.message);
    });
  }

  test('a body that is not an object is a bad request; nothing was created', async () => {
    const res = await t.ferry.admin('POST', '/audiences', [valid]);
    assert.equal(res.status, 400);
    assert.equal(res.json.errors[0].code, 'bad_request');
    assert.deepEqual((await t.ferry.admin('GET', '/audiences')).json.audiences, []);
  });

  test('an id already used, by an audience or a computed trait, is a 409 conflict', async () => {
    assert.equal((await t.ferry.admin('POST', '/audiences', valid)).status, 201);
    const again = await t.ferry.admin('POST', '/audiences', valid);
    assert.equal(again.status, 409);
    assert.equal(again.json.errors[0].code, 'conflict');
    const asTrait = await t.ferry.admin('POST', '/computed-traits', { ...valid, rule: { type: 'event_count', event: 'x' } });
    assert.equal(asTrait.status, 409);
  });

  test('POST /audiences/:id/sync answers the counts', async () => {
    await t.ferry.send('/v1/track', { userId: 'p1', event: 'Signed Up' });
    const res = await t.ferry.admin('POST', '/audiences/a1/sync');
    assert.equal(res.status, 200);
    assert.equal(res.json.added, 1);
    assert.equal(res.json.removed, 0);
    assert.equal(res.json.queued, 1);
    assert.equal(res.json.syncCount, 2);
    assert.equal(res.json.syncedAt, new Date(t.clock.now()).toISOString());
  });

  test('every audience route needs the admin Bearer token', async () => {
    const routes: [string, string][] = [
      ['GET', '/audiences'],
      ['POST', '/audiences'],
      ['GET', '/audiences/a1'],
      ['DELETE', '/audiences/a1'],
      ['POST', '/audiences/a1/sync'],
      ['GET', '/computed-traits'],
    ];
    for (const [method, path] of routes) {
      for (const authorization of [undefined, 'Bearer wrong-token', `Basic ${Buffer.from(`${adminToken}:`).toString('base64')}`]) {
        const res = await fetch(`${t.ferry.url}/admin/v1${path}`, {
          method,
          headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
          body: method === 'POST' ? JSON.stringify(valid) : undefined,
        });
        assert.equal(res.status, 401, `${method} ${path} with ${authorization ?? 'no token'}`);
        assert.equal(((await res.json()) as { errors: { code: string }[] }).errors[0]!.code, 'admin_unauthorized');
      }
    }
    assert.equal((await t.ferry.admin('GET', '/audiences/a1')).status, 200, 'the audience survived the refused DELETE');
  });
});

describe('the sync loop runs while Ferry delivers', () => {
  test('start() syncs on the interval and the worker sends the change; stop() ends the loop', async () => {
    const receiver = await startReceiver();
    const ferry = await startFerry(testConfig([webhooksDestination('hooks', [`${receiver.url}/hooks`], { sources: [] })], { audiences: { syncIntervalMs: 5 } }));
    try {
      const created = await ferry.admin('POST', '/audiences', {
        id: 'trial',
        name: 'Trial Users',
        destinationIds: ['hooks'],
        rule: { type: 'trait', trait: 'plan', equals: 'trial' },
      });
      assert.equal(created.status, 201);
      assert.equal(created.json.sync.added, 0);
      // Nobody calls sync: only the loop can notice the new member.
      await ferry.send('/v1/identify', { userId: 'loop-1', traits: { plan: 'trial' } });
      const [got] = await receiver.waitFor(1);
      assert.deepEqual(got!.json.traits, { trial_users: true });
      assert.equal(got!.json.userId, 'loop-1');
    } finally {
      await ferry.stop();
      await receiver.close();
    }
  });
});
