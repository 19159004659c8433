/**
 * GET /admin/v1/audiences/{id}/syncs and /computed-traits/{id}/syncs: each sync's figures
 * (or its failure), newest first, quiet syncs folded, the newest `syncHistoryLimit` kept.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { syncHistoryLimit } from '../../src/store/audience-rows.js';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { adminCall, startFerryOn, storeKinds, type StoreKind } from '../helpers/ferry-on-store.js';
import { stopPostgres } from '../helpers/postgres.js';
import { startReceiver } from '../helpers/receiver.js';

after(() => stopPostgres());

const T0 = Date.parse('2026-04-01T08:00:00.000Z');
const dayMs = 86_400_000;
const isoAt = (ms: number) => new Date(ms).toISOString();
const track = (userId: string, event: string) => ({ type: 'track', userId, event });

/**
 * Runs a statement that changes the schema on a connection of the test's own: how a sync is
 * made to fail for real (its table gone), not by a stand-in for the store.
 */
async function alter(kind: StoreKind, server: TestFerry, rows: (sql: string) => Promise<unknown>, sql: string): Promise<void> {
  if (kind === 'postgres') {
    await rows(sql);
    return;
  }
  const db = new Database(join(server.dataDir, 'ferry.db'));
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}

for (const kind of storeKinds) {
  describe(`audience sync history (${kind})`, () => {
    test('each sync is listed newest first with its figures; quiet ones fold into one entry; pages follow `next`', async (t) => {
      const onCleanup = cleanups(t);
      const receiver = await startReceiver();
      onCleanup(() => receiver.close());
      const clock = new ManualClock(T0);
      const config = testConfig([webhooksDestination('hooks', [receiver.url], { sources: [] })], { audiences: { syncIntervalMs: dayMs } });
      const { server } = await startFerryOn(kind, config, { clock, deliver: false }, onCleanup);
      const ingest = async (batch: unknown[]) => assert.equal((await server.send('/v1/batch', { batch })).status, 200);
      await ingest([track('u1', 'Order'), track('u2', 'Order')]);

      const created = await server.admin('POST', '/audiences', {
        id: 'buyers',
        name: 'Buyers',
        destinationIds: ['hooks'],
        rule: { type: 'event', event: 'Order', minCount: 1 },
      });
      assert.equal(created.status, 201);
      for (let i = 1; i <= 3; i += 1) {
        clock.advance(60_000);
        assert.equal((await server.admin('POST', '/audiences/buyers/sync')).status, 200);
      }
      clock.advance(60_000);
      await ingest([track('u3', 'Order')]);
      assert.equal((await server.admin('POST', '/audiences/buyers/sync')).json.added, 1);

      const history = await server.admin('GET', '/audiences/buyers/syncs');
      assert.equal(history.status, 200);
      const entries = history.json.syncs as any[];
      assert.deepEqual(
        entries.map((e) => ({ ...e, id: undefined })),
        [
          {
            id: undefined,
            status: 'done',
            startedAt: isoAt(T0 + 240_000),
            finishedAt: isoAt(T0 + 240_000),
            runs: 1,
            syncCount: 5,
            added: 1,
            removed: 0,
            changed: 0,
            forgotten: 0,
            queued: 1,
            memberCount: 3,
            error: null,
          },
          {
            id: undefined,
            status: 'done',
            startedAt: isoAt(T0 + 60_000),
            finishedAt: isoAt(T0 + 180_000),
            runs: 3,
            syncCount: 4,
            added: 0,
            removed: 0,
            changed: 0,
            forgotten: 0,
            queued: 0,
            memberCount: 2,
            error: null,
          },
          {
            id: undefined,
            status: 'done',
            startedAt: isoAt(T0),
            finishedAt: isoAt(T0),
            runs: 1,
            syncCount: 1,
            added: 2,
            removed: 0,
            changed: 0,
            forgotten: 0,
            queued: 2,
            memberCount: 2,
            error: null,
          },
        ],
      );
      assert.equal(history.json.next, null);
      assert.ok(entries[0].id > entries[1].id && entries[1].id > entries[2].id, 'ids grow with time');

      const page1 = (await server.admin('GET', '/audiences/buyers/syncs?limit=2')).json;
      assert.deepEqual(
        page1.syncs.map((e: any) => e.syncCount),
        [5, 4],
      );
      assert.equal(page1.next, String(entries[1].id));
      const page2 = (await server.admin('GET', `/audiences/buyers/syncs?limit=2&after=${page1.next}`)).json;
      assert.deepEqual([page2.syncs.map((e: any) => e.syncCount), page2.next], [[1], null]);
      // Exactly a page left: `next` is null, never a cursor to an empty page.
      const whole = (await server.admin('GET', '/audiences/buyers/syncs?limit=3')).json;
      assert.deepEqual([whole.syncs.map((e: any) => e.syncCount), whole.next], [[5, 4, 1], null]);
      const lastOne = (await server.admin('GET', `/audiences/buyers/syncs?limit=1&after=${entries[1].id}`)).json;
      assert.deepEqual([lastOne.syncs.map((e: any) => e.syncCount), lastOne.next], [[1], null]);

      // The members page the same way.
      const members = (await server.admin('GET', '/audiences/buyers/members')).json;
      const userIds: string[] = members.members.map((m: any) => m.userId);
      assert.ok(userIds.length >= 2, userIds.join());
      assert.equal(members.next, null);
      assert.equal((await server.admin('GET', `/audiences/buyers/members?limit=${userIds.length}`)).json.next, null, 'exactly a page');
      const short = (await server.admin('GET', `/audiences/buyers/members?limit=${userIds.length - 1}`)).json;
      assert.deepEqual([short.members.map((m: any) => m.userId), short.next], [userIds.slice(0, -1), userIds.at(-2)]);
      const rest = (await server.admin('GET', `/audiences/buyers/members?limit=${userIds.length - 1}&after=${short.next}`)).json;
      assert.deepEqual([rest.members.map((m: any) => m.userId), rest.next], [userIds.slice(-1), null]);

      // A computed trait has its own history under its own path; neither path lists the other kind.
      await server.admin('POST', '/computed-traits', {
        id: 'orders',
        name: 'Orders',
        destinationIds: ['hooks'],
        rule: { type: 'event_count', event: 'Order' },
      });
      assert.deepEqual(
        (await server.admin('GET', '/computed-traits/orders/syncs')).json.syncs.map((e: any) => [e.syncCount, e.added, e.memberCount]),
        [[1, 3, 3]],
      );
      for (const path of ['/computed-traits/buyers/syncs', '/audiences/orders/syncs', '/audiences/nobody/syncs']) {
        const res = await server.admin('GET', path);
        assert.deepEqual([res.status, res.json.errors[0].code], [404, 'not_found'], path);
      }
      const bad: [string, number, string, string][] = [
        ['/audiences/buyers/syncs?status=failed', 400, 'unknown_parameter', 'status'],
        ['/audiences/buyers/syncs?after=abc', 400, 'bad_request', 'after'],
        ['/audiences/buyers/syncs?limit=0', 400, 'bad_request', 'limit'],
      ];
      for (const [path, status, code, at] of bad) {
        const res = await server.admin('GET', path);
        assert.deepEqual([res.status, res.json.errors[0].code, res.json.errors[0].path], [status, code, at], path);
      }
      const read = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'viewer', scope: 'read' })).json.token;
      assert.equal((await adminCall(server.url, read, 'GET', '/audiences/buyers/syncs')).status, 200, 'a read token reads it');
    });

    test('a failed sync is kept with its error and no figures; the newest entries are kept; a deleted audience takes its history', async (t) => {
      const onCleanup = cleanups(t);
      const clock = new ManualClock(T0);
      const config = testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/'], { sources: [] })], { audiences: { syncIntervalMs: dayMs } });
      const { server, rows } = await startFerryOn(kind, config, { clock, deliver: false }, onCleanup);
      assert.equal((await server.send('/v1/batch', { batch: [track('u1', 'Order')] })).status, 200);
      assert.equal(
        (
          await server.admin('POST', '/audiences', {
            id: 'buyers',
            name: 'Buyers',
            destinationIds: ['hooks'],
            rule: { type: 'event', event: 'Order', minCount: 1 },
          })
        ).status,
        201,
      );

      // A new member to send, and nowhere to queue it: every sync fails until the table is back.
      assert.equal((await server.send('/v1/batch', { batch: [track('u2', 'Order')] })).status, 200);
      await alter(kind, server, rows, 'ALTER TABLE deliveries RENAME TO deliveries_away');
      clock.advance(1000);
      const failed = await server.admin('POST', '/audiences/buyers/sync');
      assert.ok(failed.status >= 500, `the sync fails: ${failed.status}`);
      const [entry] = (await server.admin('GET', '/audiences/buyers/syncs?limit=1')).json.syncs;
      assert.deepEqual(
        { ...entry, id: undefined, error: undefined },
        {
          id: undefined,
          status: 'failed',
          startedAt: isoAt(T0 + 1000),
          finishedAt: isoAt(T0 + 1000),
          runs: 1,
          syncCount: null,
          added: null,
          removed: null,
          changed: null,
          forgotten: null,
          queued: null,
          memberCount: null,
          error: undefined,
        },
      );
      assert.match(entry.error, /^(error 42P01|SqliteError SQLITE_ERROR): the sync failed/, "the store's code for the missing table");
      assert.doesNotMatch(entry.error, /deliveries/, 'not the message, which may quote data');
      assert.equal((await server.admin('GET', '/audiences/buyers')).json.syncCount, 1, 'a failed sync counts for nothing');

      // Failures never fold: enough of them push the first sync out of the history.
      for (let i = 1; i < syncHistoryLimit; i += 1) await server.admin('POST', '/audiences/buyers/sync');
      const all = (await server.admin('GET', '/audiences/buyers/syncs?limit=1000')).json.syncs as any[];
      assert.equal(all.length, syncHistoryLimit);
      assert.ok(
        all.every((e) => e.status === 'failed'),
        'the first (done) sync was the oldest, and went',
      );

      await alter(kind, server, rows, 'ALTER TABLE deliveries_away RENAME TO deliveries');
      assert.equal((await server.admin('POST', '/audiences/buyers/sync')).json.syncCount, 2);
      assert.equal((await server.admin('GET', '/audiences/buyers/syncs?limit=1')).json.syncs[0].status, 'done');
      assert.equal(Number((await rows('SELECT COUNT(*) AS n FROM audience_syncs'))[0]!['n']), syncHistoryLimit);
      assert.equal((await server.admin('DELETE', '/audiences/buyers')).status, 204);
      assert.equal(Number((await rows('SELECT COUNT(*) AS n FROM audience_syncs'))[0]!['n']), 0);
    });
  });
}
