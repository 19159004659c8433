import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import pino from 'pino';
import { join } from 'node:path';
import { AudienceSync } from '../../src/audiences/audience-sync.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import type { Store } from '../../src/store/store.js';
import { ManualClock } from '../../src/util/clock.js';
import { adminToken, secret, startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { freshSchema, openFreshPgStore, stopPostgres } from '../helpers/postgres.js';
import { inSqliteFile } from '../helpers/sqlite.js';
import { cleanups } from '../helpers/cleanups.js';
import { startReceiver, type Received, type TestReceiver } from '../helpers/receiver.js';

const dayMs = 86_400_000;
// A day (the schema's maximum): the loop never fires on its own inside a test that drives syncs by hand.
const handDriven = { audiences: { syncIntervalMs: dayMs } };

/** One set of scenarios, every store: each suite gets a fresh one (own file or own schema). */
interface Backend {
  name: 'sqlite' | 'postgres';
  /**
   * The store to give Ferry (none: SQLite in the Ferry's data directory), how to drop it after,
   * and how to run a `SELECT COUNT(*)` in its database over a connection of the test's own.
   */
  open(): Promise<{ store: Store | undefined; cleanup: () => Promise<void>; count: (ferry: TestFerry, sql: string) => Promise<number> }>;
}

const backends: Backend[] = [
  {
    name: 'sqlite',
    open: async () => ({
      store: undefined,
      cleanup: async () => {},
      count: async (ferry, sql) => Number(inSqliteFile(join(ferry.dataDir, 'ferry.db'), (db) => db.prepare(sql).pluck().get())),
    }),
  },
  {
    name: 'postgres',
    open: async () => {
      const { store, cleanup, inSchema } = await openFreshPgStore();
      return { store, cleanup, count: (_ferry, sql) => inSchema(async (client) => Number(Object.values((await client.query(sql)).rows[0] as object)[0])) };
    },
  },
];
after(() => stopPostgres());

/** A Ferry whose worker and sync loop are driven by hand, two destinations (one disabled) on one receiver. */
async function setup(backend: Backend): Promise<{
  ferry: TestFerry;
  receiver: TestReceiver;
  clock: ManualClock;
  sync: AudienceSync;
  count: (sql: string) => Promise<number>;
  close: () => Promise<void>;
}> {
  const { store, cleanup, count } = await backend.open();
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
    { clock, deliver: false, ...(store ? { store } : {}) },
  );
  assert.ok(ferry.ferry.audiences, `the ${backend.name} store comes with audiences`);
  const close = async () => {
    // The store closes with Ferry, before its schema is dropped.
    await ferry.stop();
    await receiver.close();
    await cleanup();
  };
  return { ferry, receiver, clock, sync: ferry.ferry.audiences, count: (sql) => count(ferry, sql), close };
}

/** Sends every due job and returns the requests that arrived meanwhile; nothing is due afterwards. */
async function deliver(ferry: TestFerry, receiver: TestReceiver): Promise<Received[]> {
  const before = receiver.requests.length;
  await ferry.idle();
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

for (const backend of backends) {
  describe(`${backend.name}:`, () => {
    describe('audiences synced to a Webhooks destination as identify calls', () => {
      let t: Awaited<ReturnType<typeof setup>>;
      before(async () => {
        t = await setup(backend);
      });
      after(() => t.close());

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
        assert.deepEqual(
          got.map((r) => r.path),
          ['/hooks', '/hooks'],
          'the disabled destination gets nothing',
        );
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
        assert.deepEqual(
          { ...outcome, syncedAtMs: 0 },
          { id: 'pro-users', syncCount: 2, syncedAtMs: 0, added: 0, removed: 0, changed: 0, forgotten: 0, queued: 0, memberCount: 2 },
        );
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
        await ferry.deletionsDone();
        assert.equal(await t.count(`SELECT COUNT(*) AS n FROM audience_members WHERE user_id = 'u4'`), 0, 'no trace of u4 is kept');
        const outcome = await sync.sync('pro-users');
        assert.deepEqual([outcome?.removed, outcome?.forgotten, outcome?.queued, outcome?.memberCount], [0, 0, 0, 3], 'the request removed the member already');
        assert.deepEqual(await deliver(ferry, receiver), [], 'no identify recreates the deleted user');
      });

      test('the GET list shows the audience; DELETE removes it and its members', async () => {
        const { ferry } = t;
        const list = await ferry.admin('GET', '/audiences');
        assert.equal(list.status, 200);
        assert.deepEqual(
          list.json.audiences.map((a: { id: string }) => a.id),
          ['pro-users'],
        );
        const deleted = await ferry.admin('DELETE', '/audiences/pro-users');
        assert.equal(deleted.status, 204);
        assert.equal((await ferry.admin('GET', '/audiences/pro-users')).status, 404);
        assert.equal((await ferry.admin('POST', '/audiences/pro-users/sync')).status, 404);
        assert.equal(await t.count(`SELECT COUNT(*) AS n FROM audience_members WHERE audience_id = 'pro-users'`), 0);
      });
    });

    describe('event rules follow the clock', () => {
      let t: Awaited<ReturnType<typeof setup>>;
      let t0: number;
      before(async () => {
        t = await setup(backend);
        t0 = t.clock.now();
      });
      after(() => t.close());

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
        assert.deepEqual(
          traitsByUser(
            first.filter((r) => 'recent_buyers' in r.json.traits),
            'recent_buyers',
          ),
          { u1: true, u2: true },
        );
        assert.deepEqual(
          traitsByUser(
            first.filter((r) => 'repeat_buyers' in r.json.traits),
            'repeat_buyers',
          ),
          { u2: true, u3: true },
        );

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

        assert.deepEqual(
          (await ferry.admin('GET', '/computed-traits')).json.computedTraits.map((c: { id: string }) => c.id),
          ['logins-7d'],
        );
        assert.equal((await ferry.admin('GET', '/audiences/logins-7d')).status, 404, 'a computed trait is not an audience');
      });
    });

    describe('a sync is one transaction', () => {
      let t: Awaited<ReturnType<typeof setup>>;
      before(async () => {
        t = await setup(backend);
      });
      after(() => t.close());

      test('a sync that fails midway queues nothing and keeps the members, so the next sync sends the change once', async () => {
        const { ferry, receiver, clock, sync } = t;
        await ingest(ferry, [identify('a', { vip: true })]);
        const created = await ferry.admin('POST', '/audiences', {
          id: 'vips',
          name: 'VIPs',
          destinationIds: ['hooks'],
          rule: { type: 'trait', trait: 'vip', equals: true },
        });
        assert.equal(created.status, 201);
        assert.deepEqual(traitsByUser(await deliver(ferry, receiver), 'vi_ps'), { a: true });

        await ingest(ferry, [identify('b', { vip: true }), identify('c', { vip: true }), identify('a', { vip: false })]);
        let made = 0;
        const failing = new AudienceSync({
          audiences: ferry.ferry.store.audiences,
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
        t = await setup(backend);
      });
      after(() => t.close());

      const valid = { id: 'a1', name: 'Power Users', destinationIds: ['hooks'], rule: { type: 'event', event: 'Signed Up' } };
      const cases: { name: string; body: unknown; path: string | undefined; message: RegExp }[] = [
        {
          name: 'unknown rule type',
          body: { ...valid, rule: { type: 'sql', query: 'x' } },
          path: 'rule.type',
          message: /^rule\.type: must be "event" or "trait"$/,
        },
        {
          name: 'event_count is for computed traits',
          body: { ...valid, rule: { type: 'event_count', event: 'x' } },
          path: 'rule.type',
          message: /"event" or "trait"/,
        },
        { name: 'unknown key in a rule', body: { ...valid, rule: { type: 'event', event: 'x', within: 7 } }, path: 'rule.within', message: /unknown key/ },
        { name: 'minCount below 1', body: { ...valid, rule: { type: 'event', event: 'x', minCount: 0 } }, path: 'rule.minCount', message: /at least 1/ },
        {
          name: 'fractional withinDays',
          body: { ...valid, rule: { type: 'event', event: 'x', withinDays: 1.5 } },
          path: 'rule.withinDays',
          message: /whole number/,
        },
        {
          name: 'trait rule compared with an object',
          body: { ...valid, rule: { type: 'trait', trait: 'plan', equals: { a: 1 } } },
          path: 'rule.equals',
          message: /string, number, boolean or null/,
        },
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

    describe('trait rules compare JSON types, whatever else the stored events hold', () => {
      let t: Awaited<ReturnType<typeof setup>>;
      before(async () => {
        t = await setup(backend);
      });
      after(() => t.close());

      const cases: { id: string; trait: string; equals: string | number | boolean | null; members: string[] }[] = [
        { id: 'level-1', trait: 'level', equals: 1, members: ['n1', 's1'] },
        { id: 'level-string', trait: 'level', equals: '1', members: ['n3'] },
        { id: 'level-true', trait: 'level', equals: true, members: ['n4'] },
        { id: 'level-null', trait: 'level', equals: null, members: ['n6'] },
        { id: 'level-fraction', trait: 'level', equals: 1.5, members: ['n5'] },
        { id: 'note-nul', trait: 'note', equals: 'a\u0000b', members: ['s1'] },
        { id: 'note-escape-text', trait: 'note', equals: 'a\\u0000b', members: ['s2'] },
        { id: 'odd-surrogate', trait: 'odd', equals: '\ud800', members: ['s1'] },
      ];

      before(async () => {
        await ingest(t.ferry, [
          identify('n1', { level: 1 }),
          identify('n3', { level: '1' }),
          identify('n4', { level: true }),
          identify('n5', { level: 1.5 }),
          identify('n6', { level: null }),
          // PostgreSQL's jsonb refuses NUL and lone surrogates: events holding them must neither stop the sync nor match wrongly.
          identify('s1', { level: 1, note: 'a\u0000b', odd: '\ud800' }),
          identify('s2', { note: 'a\\u0000b' }),
        ]);
      });
      for (const c of cases) {
        test(`${c.trait} equals ${JSON.stringify(c.equals)}: ${c.members.join(', ')}`, async () => {
          const created = await t.ferry.admin('POST', '/audiences', {
            id: c.id,
            name: c.id,
            destinationIds: ['hooks'],
            rule: { type: 'trait', trait: c.trait, equals: c.equals },
          });
          assert.equal(created.status, 201, JSON.stringify(created.json));
          const got = await deliver(t.ferry, t.receiver);
          assert.deepEqual(got.map((r) => r.json.userId as string).sort(), c.members);
        });
      }
    });

    describe('the sync loop runs while Ferry delivers', () => {
      test('start() syncs on the interval of the clock and the worker sends the change; stop() ends the loop', async () => {
        const { store, cleanup } = await backend.open();
        const receiver = await startReceiver();
        const clock = new ManualClock();
        const ferry = await startFerry(
          testConfig([webhooksDestination('hooks', [`${receiver.url}/hooks`], { sources: [] })], { audiences: { syncIntervalMs: 60_000 } }),
          {
            clock,
            ...(store ? { store } : {}),
          },
        );
        try {
          const created = await ferry.admin('POST', '/audiences', {
            id: 'trial',
            name: 'Trial Users',
            destinationIds: ['hooks'],
            rule: { type: 'trait', trait: 'plan', equals: 'trial' },
          });
          assert.equal(created.status, 201);
          assert.equal(created.json.sync.added, 0);
          // Nobody calls sync: only the loop can notice the new member, once its interval is over.
          await ferry.send('/v1/identify', { userId: 'loop-1', traits: { plan: 'trial' } });
          clock.advance(59_999);
          assert.deepEqual((await ferry.admin('GET', '/deliveries')).json.deliveries, [], 'nothing synced before the interval ended');
          clock.advance(1);
          const [got] = await receiver.waitFor(1);
          assert.deepEqual(got!.json.traits, { trial_users: true });
          assert.equal(got!.json.userId, 'loop-1');
        } finally {
          await ferry.stop();
          await receiver.close();
          await cleanup();
        }
      });
    });
  });
}

/** Resolves once `count` backends wait, directly or behind each other, for a lock that `holderPid` holds. */
async function waitForBlocked(client: pg.Client, holderPid: number, count: number): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    const { rows } = await client.query<{ n: number }>(
      `WITH RECURSIVE blocked(pid) AS (
         SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))
         UNION
         SELECT a.pid FROM pg_stat_activity a JOIN blocked b ON b.pid = ANY(pg_blocking_pids(a.pid)))
       SELECT COUNT(*)::int AS n FROM blocked`,
      [holderPid],
    );
    if (rows[0]!.n >= count) return;
  }
  assert.fail(`${count} backends never queued behind the lock`);
}

describe('postgres: two nodes sync the same audience', () => {
  test('concurrent syncs of one audience on two nodes queue each change exactly once', async (t) => {
    const after = cleanups(t);
    const { url, schema } = await freshSchema(after);
    const receiver = await startReceiver();
    after(() => receiver.close());
    const clock = new ManualClock();
    const config = testConfig([webhooksDestination('hooks', [`${receiver.url}/hooks`], { sources: [] })], handDriven);
    const nodes: TestFerry[] = [];
    for (let i = 0; i < 2; i++) {
      const node = await startFerry(config, { clock, deliver: false, store: await PgStore.open({ connectionString: url, schema, poolSize: 4 }) });
      after(() => node.stop());
      nodes.push(node);
    }
    const [a, b] = nodes as [TestFerry, TestFerry];
    const syncs = nodes.map((n) => n.ferry.audiences!);

    const created = await a.admin('POST', '/audiences', {
      id: 'pro-users',
      name: 'Pro Users',
      destinationIds: ['hooks'],
      rule: { type: 'trait', trait: 'plan', equals: 'pro' },
    });
    assert.equal(created.status, 201);
    const users = Array.from({ length: 20 }, (_, i) => `p${String(i).padStart(2, '0')}`);
    await ingest(
      a,
      users.slice(0, 10).map((u) => identify(u, { plan: 'pro' })),
    );
    await ingest(
      b,
      users.slice(10).map((u) => identify(u, { plan: 'pro' })),
    );

    // Hold the audience row so both syncs are inside their transactions at once, queued on
    // the lock; without it they could simply run one after the other.
    const holder = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
    await holder.connect();
    after(() => holder.end());
    await holder.query('BEGIN');
    await holder.query(`SELECT id FROM audiences WHERE id = 'pro-users' FOR UPDATE`);
    const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const racing = Promise.all(syncs.map((s) => s.sync('pro-users')));
    const watcher = new pg.Client({ connectionString: url });
    await watcher.connect();
    after(() => watcher.end());
    await waitForBlocked(watcher, holderPid, 2);
    await holder.query('COMMIT');
    const outcomes = await racing;
    assert.deepEqual(
      outcomes.map((o) => o!.added).sort((x, y) => x - y),
      [0, 20],
      'one node sent every change, the other found nothing left',
    );
    assert.deepEqual(outcomes.map((o) => o!.syncCount).sort(), [2, 3], 'the syncs took turns');

    const queued = await a.ferry.store.listDeliveries({ limit: 1000 });
    assert.deepEqual(queued.map((d) => d.userId).sort(), users, 'one job per user');
    assert.ok(queued.every((d) => d.kind === 'audience'));
    await Promise.all(nodes.map((n) => n.idle()));
    assert.deepEqual(traitsByUser(receiver.requests, 'pro_users'), Object.fromEntries(users.map((u) => [u, true])));
    assert.equal(receiver.requests.length, users.length, 'each user received once');

    // And free-running: a few rounds of both nodes syncing at once, with changes in between.
    const before = receiver.requests.length;
    for (const [round, leaving] of [users.slice(0, 5), users.slice(5, 12), []].entries()) {
      clock.advance(60_000);
      await ingest(
        round % 2 === 0 ? a : b,
        leaving.map((u) => identify(u, { plan: 'free' })),
      );
      const both = await Promise.all(syncs.map((s) => s.sync('pro-users')));
      assert.deepEqual(
        both.map((o) => o!.removed).sort((x, y) => x - y),
        [0, leaving.length],
        `round ${round}`,
      );
    }
    await Promise.all(nodes.map((n) => n.idle()));
    const removed = receiver.requests.slice(before);
    assert.deepEqual(traitsByUser(removed, 'pro_users'), Object.fromEntries(users.slice(0, 12).map((u) => [u, false])));
    assert.equal(removed.length, 12, 'each removal received once');
    assert.equal((await b.admin('GET', '/audiences/pro-users')).json.memberCount, 8);
  });
});
