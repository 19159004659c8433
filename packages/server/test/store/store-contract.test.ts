import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { migrations } from '../../src/store/postgres/migrations/index.js';
import { toLogEntry } from '../../src/store/postgres/attempt-log.js';
import { claimedSql, claimPlanner, claimSql, nextDueSql } from '../../src/store/postgres/pg-claim.js';
import { completeSql, completionPlanner } from '../../src/store/postgres/pg-complete.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { migrations as sqliteMigrations } from '../../src/store/sqlite/migrations/index.js';
import { claimAfterSql } from '../../src/store/sqlite/sqlite-claim.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { AttemptRecord } from '../../src/model/attempt.js';
import type { AffectedSources, ClaimedDelivery, DeleteNotice, NewEvent, Store } from '../../src/store/store.js';
import { ManualClock } from '../../src/util/clock.js';
import { turn } from '../helpers/until.js';
import { dropSchema, openFreshPgStore, postgresUrl, stopPostgres, uniqueSchema } from '../helpers/postgres.js';

/** Time and the least interval between two reclaims of deleted space, for a store that is told them. */
interface ReclaimTiming {
  clock: ManualClock;
  intervalMs: number;
}

/** One contract, every implementation: each test gets a fresh store (own file or own schema). */
const backends: { name: string; open: (timing?: ReclaimTiming) => Promise<{ store: Store; cleanup: () => Promise<void> }> }[] = [
  {
    name: 'sqlite',
    open: async (timing) => {
      const dir = mkdtempSync(join(tmpdir(), 'ferry-store-'));
      const reclaim = timing && { clock: timing.clock, walTruncateIntervalMs: timing.intervalMs };
      const store = new SqliteStore({ path: join(dir, 'ferry.db'), ...reclaim });
      return { store, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'postgres',
    open: (timing) => openFreshPgStore(4, timing && { clock: timing.clock, vacuumIntervalMs: timing.intervalMs }),
  },
];
after(() => stopPostgres());

const t0 = Date.parse('2026-06-01T00:00:00.000Z');

function event(messageId: string, over: Partial<NewEvent> = {}): NewEvent {
  return {
    sourceId: 'app',
    messageId,
    type: 'track',
    userId: 'u1',
    event: 'E',
    receivedAtMs: t0,
    json: JSON.stringify({ messageId }),
    deliveries: [{ destinationId: 'd1', kind: 'event', body: `{"messageId":"${messageId}"}` }],
    ...over,
  };
}

/** Notices for a regulation: one per user to `destinationId`, from the first source that held its events; records what it was given. */
function noticesTo(given: AffectedSources[], destinationId: string): (affected: AffectedSources) => DeleteNotice[] {
  return (affected) => {
    given.push(affected);
    return Object.entries(affected).flatMap(([userId, sources]) =>
      sources.length === 0 ? [] : [{ destinationId, sourceId: sources[0]!, userId, body: `{"type":"delete","userId":"${userId}"}` }],
    );
  };
}

const attempt = (over: Partial<AttemptRecord> = {}): AttemptRecord => ({
  url: 'https://example.com/hook',
  startedAtMs: t0,
  latencyMs: 12,
  statusCode: 503,
  errorClass: 'http',
  errorMessage: 'HTTP 503',
  responseBody: 'busy',
  trigger: 'scheduled',
  ...over,
});

for (const backend of backends) {
  describe(`store contract: ${backend.name}`, () => {
    async function withStore(fn: (store: Store) => Promise<void>, timing?: ReclaimTiming) {
      const { store, cleanup } = await backend.open(timing);
      try {
        await fn(store);
      } finally {
        await store.close();
        await cleanup();
      }
    }

    test('S01 ingest stores events with their jobs; a messageId seen again is a duplicate', () =>
      withStore(async (store) => {
        const first = await store.ingest({ receivedAtMs: t0, events: [event('a'), event('b'), event('a')], rejections: [] });
        assert.deepEqual(first, { inserted: 2, duplicates: 1, deliveries: 2 });
        const again = await store.ingest({
          receivedAtMs: t0,
          events: [event('b'), event('c', { sourceId: 'other' }), event('b', { sourceId: 'other' })],
          rejections: [],
        });
        assert.deepEqual(again, { inserted: 2, duplicates: 1, deliveries: 2 }, 'idempotency is per source');
        const stats = await store.stats();
        assert.equal(stats.events, 4);
        assert.equal(stats.deliveries.pending, 4);
      }));

    test('S02 rejections are kept for operators and counted per source and code', () =>
      withStore(async (store) => {
        await store.ingest({
          receivedAtMs: t0,
          events: [],
          rejections: [
            { sourceId: 'app', index: 1, code: 'missing_event', message: 'no event' },
            { sourceId: 'app', index: 2, code: 'missing_event', message: 'no event' },
          ],
        });
        await store.ingest({ receivedAtMs: t0, events: [], rejections: [{ sourceId: 'other', index: 0, code: 'invalid_type', message: 'x' }] });
        assert.deepEqual(await store.rejectionCounts(), [
          { sourceId: 'app', code: 'missing_event', count: 2 },
          { sourceId: 'other', code: 'invalid_type', count: 1 },
        ]);
        const recent = await store.listRejections({ sourceId: 'app', limit: 10 });
        assert.deepEqual(
          recent.map((r) => r.index),
          [2, 1],
        );
        assert.equal(recent[0]!.receivedAt, new Date(t0).toISOString(), 'stamped with the request time');
        assert.equal((await store.stats()).rejections, 3);
      }));

    test('S03 a claim leases due jobs of one destination; others cannot claim them until the lease runs out', () =>
      withStore(async (store) => {
        await store.ingest({
          receivedAtMs: t0,
          events: [event('a'), event('b'), event('c', { deliveries: [{ destinationId: 'd2', kind: 'event', body: '{}' }] })],
          rejections: [],
        });
        assert.equal(await store.nextDueAt(['d1']), t0);
        const w1 = await store.claim({ destinationId: 'd1', owner: 'w1', nowMs: t0, leaseMs: 1000, limit: 10 });
        assert.deepEqual(
          w1.map((j) => j.messageId),
          ['a', 'b'],
        );
        assert.equal(w1[0]!.body, '{"messageId":"a"}', 'the exact stored bytes');
        assert.equal(w1[0]!.firstAttemptAtMs, null);
        assert.deepEqual(await store.claim({ destinationId: 'd1', owner: 'w2', nowMs: t0 + 999, leaseMs: 1000, limit: 10 }), []);
        assert.equal(await store.nextDueAt(['d1']), t0 + 1000, 'held jobs are due again when their lease runs out');
        assert.equal((await store.listDeliveries({ destinationId: 'd1', limit: 10 }))[0]!.nextAttemptAt, new Date(t0 + 1000).toISOString());
        const taken = await store.claim({ destinationId: 'd1', owner: 'w2', nowMs: t0 + 1000, leaseMs: 1000, limit: 1 });
        assert.deepEqual(
          taken.map((j) => j.messageId),
          ['a'],
          'an expired lease is due again, oldest first',
        );
        // The first worker lost its lease on `a`: its late completion is refused.
        assert.equal(
          await store.complete({ id: w1[0]!.id, owner: 'w1', nowMs: t0 + 1001, firstAttemptAtMs: t0, attempts: [attempt()], outcome: { status: 'succeeded' } }),
          false,
        );
        assert.equal(
          await store.complete({
            id: taken[0]!.id,
            owner: 'w2',
            nowMs: t0 + 1001,
            firstAttemptAtMs: t0,
            attempts: [attempt({ statusCode: 200, errorClass: null, errorMessage: null })],
            outcome: { status: 'succeeded' },
          }),
          true,
        );
        const detail = await store.getDelivery(taken[0]!.id);
        assert.equal(detail!.delivery.status, 'succeeded');
        assert.equal(detail!.attempts.length, 2, 'both attempts are logged');
      }));

    test('S04 completion outcomes: retry later, dead letter, success; attempts kept in order', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a'), event('b')], rejections: [] });
        const [a, b] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 10 });
        await store.complete({
          id: a!.id,
          owner: 'w',
          nowMs: t0 + 5,
          firstAttemptAtMs: t0,
          attempts: [attempt(), attempt({ url: 'https://b.example.com', statusCode: null, errorClass: 'timeout', responseBody: null })],
          outcome: { status: 'pending', nextAttemptAtMs: t0 + 2000, lastError: 'HTTP 503' },
        });
        await store.complete({
          id: b!.id,
          owner: 'w',
          nowMs: t0 + 5,
          firstAttemptAtMs: t0,
          attempts: [attempt({ statusCode: 404 })],
          outcome: { status: 'dead', reason: 'non_retryable_response', lastError: 'HTTP 404' },
        });
        const retry = (await store.getDelivery(a!.id))!;
        assert.equal(retry.delivery.status, 'pending');
        assert.equal(retry.delivery.attemptCount, 1);
        assert.equal(retry.delivery.nextAttemptAt, new Date(t0 + 2000).toISOString());
        assert.equal(retry.delivery.firstAttemptAt, new Date(t0).toISOString());
        assert.deepEqual(
          retry.attempts.map((x) => [x.url, x.errorClass]),
          [
            ['https://example.com/hook', 'http'],
            ['https://b.example.com', 'timeout'],
          ],
        );
        assert.deepEqual(await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 1999, leaseMs: 1, limit: 10 }), []);
        const [again] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 2000, leaseMs: 1, limit: 10 });
        assert.equal(again!.attemptCount, 1);
        assert.equal(again!.firstAttemptAtMs, t0);
        const dead = (await store.listDeliveries({ status: 'dead', limit: 10 }))[0]!;
        assert.equal(dead.deadReason, 'non_retryable_response');
        assert.equal(dead.lastError, 'HTTP 404');
      }));

    test('S05 replay brings dead letters back, due now, in a fresh window, as manual', () =>
      withStore(async (store) => {
        await store.ingest({
          receivedAtMs: t0,
          events: [event('a'), event('b', { deliveries: [{ destinationId: 'd2', kind: 'event', body: '{}' }] })],
          rejections: [],
        });
        for (const d of ['d1', 'd2']) {
          const [job] = await store.claim({ destinationId: d, owner: 'w', nowMs: t0, leaseMs: 1000, limit: 1 });
          await store.complete({
            id: job!.id,
            owner: 'w',
            nowMs: t0,
            firstAttemptAtMs: t0,
            attempts: [attempt()],
            outcome: { status: 'dead', reason: 'retry_window_exhausted', lastError: 'x' },
          });
        }
        assert.equal(await store.replay({ destinationId: 'd1' }, t0 + 10), 1);
        assert.equal(await store.replay({ ids: [] }, t0 + 10), 0);
        const [job] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 10, leaseMs: 1000, limit: 5 });
        assert.equal(job!.trigger, 'manual');
        assert.equal(job!.firstAttemptAtMs, null);
        assert.equal(await store.replay({ sinceMs: t0 + 1 }, t0 + 20), 0, 'd2 died before the given time');
        assert.equal(await store.replay({ sinceMs: t0, destinationIdsIn: ['d1'] }, t0 + 20), 0, 'd2 is not among the existing destinations');
        assert.equal(await store.replay({ sinceMs: t0, destinationIdsIn: [] }, t0 + 20), 0);
        assert.equal(await store.replay({ sinceMs: t0 }, t0 + 20), 1);
        const [d2] = await store.claim({ destinationId: 'd2', owner: 'w', nowMs: t0 + 20, leaseMs: 1000, limit: 1 });
        assert.equal(d2!.attemptCount, 0, 'a replay starts the backoff again');
      }));

    test('S06 releasing leases and abandoning a destination', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a'), event('b')], rejections: [] });
        await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 1 });
        assert.equal(await store.releaseLeases('w', t0 + 5), 1);
        assert.equal((await store.claim({ destinationId: 'd1', owner: 'x', nowMs: t0 + 5, leaseMs: 1, limit: 5 })).length, 2);
        assert.equal(await store.abandonPending('d1', t0 + 6), 2);
        const dead = await store.listDeliveries({ status: 'dead', limit: 5 });
        assert.deepEqual(
          dead.map((d) => d.deadReason),
          ['destination_deleted', 'destination_deleted'],
        );
      }));

    test('S06b releasing some leases returns only those jobs, and only to their own owner, due at once', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a'), event('b'), event('c'), event('d')], rejections: [] });
        const mine = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 3 });
        const [theirs] = await store.claim({ destinationId: 'd1', owner: 'x', nowMs: t0, leaseMs: 60_000, limit: 1 });
        const lease = (id: number) => ({ id, leasedUntilMs: t0 + 60_000 });
        assert.equal(await store.releaseLeases('w', t0 + 5, [lease(mine[0]!.id), lease(mine[2]!.id), lease(theirs!.id)]), 2, "x's job is not w's to hand back");
        assert.equal(await store.releaseLeases('w', t0 + 5, []), 0);
        const listed = await store.listDeliveries({ status: 'pending', limit: 10 });
        for (const id of [mine[0]!.id, mine[2]!.id])
          assert.equal(listed.find((d) => d.id === id)!.nextAttemptAt, new Date(t0).toISOString(), 'back in its old place in line');
        const again = await store.claim({ destinationId: 'd1', owner: 'y', nowMs: t0 + 5, leaseMs: 60_000, limit: 5 });
        assert.deepEqual(
          again.map((j) => j.id).sort((a, b) => a - b),
          [mine[0]!.id, mine[2]!.id].sort((a, b) => a - b),
          'the two handed back are due at once; the others stay held',
        );
        assert.equal(
          await store.complete({ id: mine[1]!.id, owner: 'w', nowMs: t0 + 6, firstAttemptAtMs: t0 + 6, attempts: [], outcome: { status: 'succeeded' } }),
          true,
          'w still holds the one it kept',
        );
      }));

    test('S06c a lease is named by its end: handing back one that ran out never frees a later claim of the same job', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a')], rejections: [] });
        const [first] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 1000, limit: 1 });
        // The lease ran out and the same worker claimed the job again.
        const [again] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 2000, leaseMs: 60_000, limit: 1 });
        assert.equal(again!.id, first!.id);
        assert.equal(await store.releaseLeases('w', t0 + 2001, [{ id: first!.id, leasedUntilMs: t0 + 1000 }]), 0, 'the old lease is gone');
        assert.deepEqual(await store.claim({ destinationId: 'd1', owner: 'x', nowMs: t0 + 2001, leaseMs: 60_000, limit: 1 }), [], 'the job is still held');
        assert.equal(await store.releaseLeases('w', t0 + 2001, [{ id: first!.id, leasedUntilMs: t0 + 62_000 }]), 1);
      }));

    test('S06e a renewed lease keeps its job from other claims until its new end; a lost one is not renewed', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a'), event('b')], rejections: [] });
        const held = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 1000, limit: 2 });
        const ids = held.map((j) => j.id).sort((a, b) => a - b);
        assert.deepEqual(
          (await store.renewLeases('w', ids, t0 + 5000)).sort((a, b) => a - b),
          ids,
        );
        assert.deepEqual(await store.renewLeases('x', ids, t0 + 9000), [], "w's leases are not x's to renew");
        assert.deepEqual(await store.renewLeases('w', [], t0 + 9000), []);
        assert.deepEqual(await store.claim({ destinationId: 'd1', owner: 'x', nowMs: t0 + 2000, leaseMs: 1000, limit: 5 }), [], 'held past the first end');
        // Named by its new end, a renewed lease is handed back.
        assert.equal(await store.releaseLeases('w', t0 + 2001, [{ id: ids[0]!, leasedUntilMs: t0 + 5000 }]), 1);
        const [taken] = await store.claim({ destinationId: 'd1', owner: 'x', nowMs: t0 + 2002, leaseMs: 1000, limit: 5 });
        assert.equal(taken!.id, ids[0]);
        assert.deepEqual(await store.renewLeases('w', ids, t0 + 9000), [ids[1]], 'the job x took is lost to w');
      }));

    test('S06f a late renewal (one overtaken by a later one) never moves a lease back', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a')], rejections: [] });
        const [job] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 1000, limit: 1 });
        assert.deepEqual(await store.renewLeases('w', [job!.id], t0 + 9000), [job!.id]);
        assert.deepEqual(await store.renewLeases('w', [job!.id], t0 + 5000), [job!.id], 'still held, so still reported renewed');
        assert.deepEqual(await store.claim({ destinationId: 'd1', owner: 'x', nowMs: t0 + 6000, leaseMs: 1000, limit: 1 }), [], 'held to the later end');
        assert.equal(await store.releaseLeases('w', t0 + 6000, [{ id: job!.id, leasedUntilMs: t0 + 9000 }]), 1, 'named by the later end');
      }));

    test('S06d jobs handed back while others stay held are the next claimed, ahead of jobs never claimed', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: Array.from({ length: 10 }, (_, i) => event(`m${i}`)), rejections: [] });
        const held = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 4 });
        const back = held.slice(2).map((j) => ({ id: j.id, leasedUntilMs: t0 + 60_000 }));
        assert.equal(await store.releaseLeases('w', t0 + 5, back), 2);
        const next = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 5, leaseMs: 60_000, limit: 2 });
        assert.deepEqual(
          next.map((j) => j.id),
          back.map((l) => l.id),
          'the two handed back, not the next two never claimed (SQLite: a claim reading on from its last job would miss them)',
        );
      }));

    test('S07 regulations purge a user in scope, queue their notices, and forget the user ids once done', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a'), event('b', { sourceId: 'other' }), event('c', { userId: 'keep' })], rejections: [] });
        const reg = await store.createRegulation({ id: 'reg_1', userIds: ['u1'], sourceIds: ['app'], nowMs: t0 });
        assert.deepEqual([reg.status, reg.userIds, reg.userCount], ['pending', ['u1'], 1]);
        assert.deepEqual(
          (await store.pendingRegulations()).map((r) => r.id),
          ['reg_1'],
        );
        const given: AffectedSources[] = [];
        const done = await store.executeRegulation({ id: 'reg_1', noticesFor: noticesTo(given, 'd1'), nowMs: t0 + 1 });
        assert.deepEqual(given, [{ u1: ['app'] }], "the sources in scope that held the user's events");
        assert.deepEqual([done.status, done.eventsDeleted, done.deliveriesDeleted, done.notificationsQueued], ['done', 1, 1, 1]);
        assert.deepEqual([done.userIds, done.userCount], [[], 1], 'the user ids are forgotten; their number stays');
        assert.equal((await store.stats()).events, 2);
        const deletes = (await store.listDeliveries({ limit: 10 })).filter((d) => d.kind === 'delete');
        assert.deepEqual(
          deletes.map((d) => [d.destinationId, d.sourceId, d.userId]),
          [['d1', 'app', 'u1']],
        );
        // Carrying it out again changes nothing.
        await store.executeRegulation({ id: 'reg_1', noticesFor: noticesTo(given, 'd1'), nowMs: t0 + 2 });
        assert.equal(given.length, 1);
        assert.equal((await store.stats()).events, 2);
      }));

    test("S07b a purge finds the identities linked to the user: aliases either way, anonymous events before login; another user's events stay", () =>
      withStore(async (store) => {
        const e = (messageId: string, over: Partial<NewEvent>) => event(messageId, { userId: undefined, ...over });
        await store.ingest({
          receivedAtMs: t0,
          events: [
            e('anon-1', { anonymousId: 'anon-v' }),
            e('anon-2', { anonymousId: 'anon-v', sourceId: 'web' }),
            e('login', { type: 'identify', userId: 'v', anonymousId: 'anon-v' }),
            e('alias-old', { type: 'alias', userId: 'v', json: JSON.stringify({ type: 'alias', previousId: 'old-v', userId: 'v' }) }),
            e('old', { userId: 'old-v', sourceId: 'legacy' }),
            e('alias-new', { type: 'alias', userId: 'new-v', json: JSON.stringify({ type: 'alias', previousId: 'v', userId: 'new-v' }), sourceId: 'crm' }),
            // The same device, used by someone else: theirs, and so is the anonymous id's event with their id.
            e('shared', { userId: 'w', anonymousId: 'anon-v' }),
            e('w-only', { userId: 'w' }),
            e('x', { userId: 'x', sourceId: 'other' }),
          ],
          rejections: [],
        });
        await store.createRegulation({ id: 'reg_links', userIds: ['v', 'x', 'nobody'], sourceIds: null, nowMs: t0 });
        const given: AffectedSources[] = [];
        const done = await store.executeRegulation({ id: 'reg_links', noticesFor: noticesTo(given, 'd1'), nowMs: t0 + 1, batchSize: 2 });
        assert.deepEqual(given, [{ v: ['app', 'crm', 'legacy', 'web'], x: ['other'], nobody: [] }]);
        assert.deepEqual([done.eventsDeleted, done.deliveriesDeleted], [7, 7]);
        const left = (await store.listDeliveries({ limit: 20 })).filter((d) => d.kind === 'event').map((d) => d.messageId);
        assert.deepEqual(left, ['shared', 'w-only']);
        assert.equal((await store.stats()).events, 2);
      }));

    test('S07c the purge also deletes the audience deliveries of user ids left with no event, and their attempts', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a', { sourceId: 'app' }), event('b', { userId: 'u2', sourceId: 'other' })], rejections: [] });
        await store.enqueue(
          ['u1', 'u2'].map((userId) => ({
            destinationId: 'aud',
            kind: 'audience' as const,
            body: `{"userId":"${userId}"}`,
            userId,
            messageId: `aud_${userId}`,
          })),
          t0,
        );
        const jobs = await store.claim({ destinationId: 'aud', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 10 });
        for (const job of jobs)
          await store.complete({
            id: job.id,
            owner: 'w',
            createdAtMs: job.createdAtMs,
            nowMs: t0 + 1,
            firstAttemptAtMs: t0,
            attempts: [attempt({ responseBody: job.body })],
            outcome: { status: 'pending', nextAttemptAtMs: t0 + 10, lastError: 'HTTP 503' },
          });
        // u2 keeps events in another source: its audience delivery stays.
        await store.createRegulation({ id: 'reg_aud', userIds: ['u1', 'u2'], sourceIds: ['app'], nowMs: t0 + 2 });
        const done = await store.executeRegulation({ id: 'reg_aud', noticesFor: () => [], nowMs: t0 + 3 });
        assert.deepEqual([done.eventsDeleted, done.deliveriesDeleted], [1, 2], 'the event delivery of u1 and its audience delivery');
        assert.deepEqual(
          (await store.listDeliveries({ limit: 10 })).map((d) => d.messageId),
          ['b', 'aud_u2'],
        );
        assert.equal(await store.getDelivery(jobs.find((j) => j.userId === 'u1')!.id), null);
        assert.equal(await store.nextDueAt(['aud']), t0 + 10, 'the purged job is not due');
      }));

    test('S07e a request interrupted after its purge resumes from its stored plan: the sources found before the purge are still told', () =>
      withStore(async (store) => {
        await store.ingest({
          receivedAtMs: t0,
          events: [event('anon', { userId: undefined, anonymousId: 'anon-u', sourceId: 'web' }), event('login', { type: 'identify', anonymousId: 'anon-u' })],
          rejections: [],
        });
        await store.createRegulation({ id: 'reg_resume', userIds: ['u1'], sourceIds: null, nowMs: t0 });
        // The notices cannot be queued (a crash at the last step): every batch is committed, the request still pending.
        await assert.rejects(
          store.executeRegulation({
            id: 'reg_resume',
            noticesFor: () => {
              throw new Error('crash');
            },
            nowMs: t0 + 1,
            batchSize: 1,
          }),
          /crash/,
        );
        const pending = (await store.getRegulation('reg_resume'))!;
        assert.deepEqual([pending.status, pending.eventsDeleted, pending.userIds], ['pending', 2, ['u1']]);
        assert.equal((await store.stats()).events, 0, 'the identify that linked the anonymous id is gone');
        const given: AffectedSources[] = [];
        const done = await store.executeRegulation({ id: 'reg_resume', noticesFor: noticesTo(given, 'd1'), nowMs: t0 + 2 });
        assert.deepEqual(given, [{ u1: ['app', 'web'] }]);
        assert.deepEqual([done.status, done.eventsDeleted, done.notificationsQueued], ['done', 2, 1]);
      }));

    test('S07d a delete notice delivered is deleted with its attempts; one still failing stays', () =>
      withStore(async (store) => {
        await store.enqueue(
          ['d1', 'd2'].map((destinationId) => ({
            destinationId,
            sourceId: 'app',
            kind: 'delete' as const,
            userId: 'u1',
            body: '{"type":"delete","userId":"u1"}',
          })),
          t0,
        );
        const [first] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 1 });
        const [second] = await store.claim({ destinationId: 'd2', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 1 });
        const retry = { status: 'pending' as const, nextAttemptAtMs: t0 + 10, lastError: 'HTTP 503' };
        assert.equal(
          await store.complete({
            id: first!.id,
            owner: 'w',
            createdAtMs: first!.createdAtMs,
            kind: 'delete',
            nowMs: t0 + 1,
            firstAttemptAtMs: t0,
            attempts: [attempt({ responseBody: first!.body })],
            outcome: retry,
          }),
          true,
        );
        assert.equal(
          await store.complete({
            id: second!.id,
            owner: 'w',
            createdAtMs: second!.createdAtMs,
            kind: 'delete',
            nowMs: t0 + 1,
            firstAttemptAtMs: t0,
            attempts: [attempt({ responseBody: second!.body })],
            outcome: retry,
          }),
          true,
        );
        const [again] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 10, leaseMs: 60_000, limit: 1 });
        const ok = attempt({ statusCode: 200, errorClass: null, errorMessage: null, responseBody: again!.body });
        assert.equal(
          await store.complete({
            id: again!.id,
            owner: 'w',
            createdAtMs: again!.createdAtMs,
            kind: 'delete',
            nowMs: t0 + 11,
            firstAttemptAtMs: t0,
            attempts: [ok],
            outcome: { status: 'succeeded' },
          }),
          true,
        );
        assert.equal(await store.getDelivery(again!.id), null, 'the delivered notice is gone');
        const kept = (await store.getDelivery(second!.id))!;
        assert.deepEqual([kept.delivery.status, kept.attempts.length], ['pending', 1], 'the other is still on its way');
      }));

    test('S07f links are not followed through a previousId two users share nor through a placeholder id; the request records what it skipped', () =>
      withStore(async (store) => {
        const alias = (messageId: string, previousId: string, userId: string) =>
          event(messageId, { type: 'alias', userId, json: JSON.stringify({ type: 'alias', previousId, userId }) });
        await store.ingest({
          receivedAtMs: t0,
          events: [
            alias('alice-device', 'device-1', 'alice'),
            alias('bob-device', 'device-1', 'bob'),
            alias('alice-undefined', 'undefined', 'alice'),
            alias('carol-undefined', 'undefined', 'carol'),
            alias('alice-old', 'old-alice', 'alice'),
            event('alice', { userId: 'alice' }),
            event('old-alice', { userId: 'old-alice' }),
            event('bob', { userId: 'bob' }),
            event('carol', { userId: 'carol' }),
            event('buggy-client', { userId: 'undefined' }),
            // The shared device's own activity, before anyone logged in: whose, nobody can tell.
            event('alice-on-device', { userId: 'alice', anonymousId: 'device-1' }),
            event('device-anon', { userId: undefined, anonymousId: 'device-1' }),
          ],
          rejections: [],
        });
        await store.createRegulation({ id: 'reg_shared', userIds: ['alice'], sourceIds: null, nowMs: t0 });
        const done = await store.executeRegulation({ id: 'reg_shared', noticesFor: () => [], nowMs: t0 + 1 });
        const left = (await store.listDeliveries({ limit: 20 })).map((d) => d.messageId).sort();
        assert.deepEqual(left, ['bob', 'bob-device', 'buggy-client', 'carol', 'carol-undefined', 'device-anon'], 'nobody but alice and her old id');
        assert.deepEqual([done.status, done.eventsDeleted], ['done', 6]);
        assert.deepEqual(
          done.linkedIdentities,
          { followed: 1, skipped: 3, reason: 'placeholder_or_shared_id' },
          'old-alice followed; device-1, bob and undefined not',
        );
      }));

    test('S07g past the limit of linked ids a request deletes only the named user and its own anonymous ids, and says so', () =>
      withStore(async (store) => {
        const alias = (messageId: string, previousId: string) =>
          event(messageId, { type: 'alias', userId: 'u1', json: JSON.stringify({ type: 'alias', previousId, userId: 'u1' }) });
        await store.ingest({
          receivedAtMs: t0,
          events: [
            alias('alias-1', 'linked-1'),
            alias('alias-2', 'linked-2'),
            event('linked-1', { userId: 'linked-1' }),
            event('linked-2', { userId: 'linked-2' }),
            event('login', { type: 'identify', anonymousId: 'anon-u1' }),
            event('before-login', { userId: undefined, anonymousId: 'anon-u1' }),
          ],
          rejections: [],
        });
        await store.createRegulation({ id: 'reg_many', userIds: ['u1'], sourceIds: null, nowMs: t0 });
        const done = await store.executeRegulation({ id: 'reg_many', noticesFor: () => [], nowMs: t0 + 1, maxLinkedUsers: 1 });
        assert.deepEqual((await store.listDeliveries({ limit: 20 })).map((d) => d.messageId).sort(), ['linked-1', 'linked-2']);
        assert.deepEqual([done.status, done.eventsDeleted], ['done', 4]);
        assert.deepEqual(done.linkedIdentities, { followed: 0, skipped: 2, reason: 'limit_exceeded' });
      }));

    test('S07h an aborted request stops at a batch boundary, still pending, and a later run finishes it', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: ['a', 'b', 'c', 'd', 'e', 'f'].map((m) => event(m)), rejections: [] });
        await store.createRegulation({ id: 'reg_stop', userIds: ['u1'], sourceIds: null, nowMs: t0 });
        // Aborted once two batches have begun.
        let looks = 0;
        const signal = {
          get aborted() {
            return ++looks > 2;
          },
        } as AbortSignal;
        const stopped = await store.executeRegulation({ id: 'reg_stop', noticesFor: () => [], nowMs: t0 + 1, batchSize: 2, signal });
        assert.deepEqual([stopped.status, stopped.eventsDeleted, stopped.userIds], ['pending', 4, ['u1']]);
        assert.equal((await store.stats()).events, 2);
        const done = await store.executeRegulation({ id: 'reg_stop', noticesFor: () => [], nowMs: t0 + 2, batchSize: 2 });
        assert.deepEqual([done.status, done.eventsDeleted], ['done', 6]);
      }));

    test('S07i space is reclaimed at most once per interval: requests within one share the run at its end', () => {
      const clock = new ManualClock(t0);
      return withStore(
        async (store) => {
          await store.reclaimDeleted();
          let second = 0;
          const later = [store.reclaimDeleted(), store.reclaimDeleted()].map((p) => p.then(() => (second += 1)));
          for (let i = 0; i < 5; i += 1) await turn();
          assert.equal(second, 0, 'not within the interval');
          clock.advance(60_000);
          await Promise.all(later);
          assert.equal(second, 2);
        },
        { clock, intervalMs: 60_000 },
      );
    });

    test('S08 listing filters and pages by id', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: ['a', 'b', 'c', 'd'].map((m) => event(m)), rejections: [] });
        const page1 = await store.listDeliveries({ limit: 3 });
        const page2 = await store.listDeliveries({ limit: 3, afterId: page1.at(-1)!.id });
        assert.deepEqual(
          [...page1, ...page2].map((d) => d.messageId),
          ['a', 'b', 'c', 'd'],
        );
        assert.deepEqual(
          (await store.listDeliveries({ messageId: 'c', limit: 5 })).map((d) => d.messageId),
          ['c'],
        );
        assert.equal((await store.listDeliveries({ destinationId: 'nope', limit: 5 })).length, 0);
        assert.equal((await store.listDeliveries({ sourceId: 'app', status: 'pending', limit: 5 })).length, 4);
      }));

    test('S09 loose deliveries, catalog and settings round-trip', () =>
      withStore(async (store) => {
        await store.enqueue([{ destinationId: 'd1', kind: 'audience', body: '{"type":"identify"}', userId: 'u9', messageId: 'aud_1', sourceId: 'app' }], t0);
        const [job] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 1, limit: 1 });
        assert.equal(job!.kind, 'audience');
        assert.equal(job!.messageId, 'aud_1');
        await store.saveSource({ id: 's', name: 'S', writeKey: 'k' });
        await store.saveSource({ id: 's', name: 'S2', writeKey: 'k2' });
        const destination = {
          id: 'd',
          type: 'Webhooks' as const,
          name: 'D',
          enabled: true,
          sources: ['s'],
          settings: { webhooks: [{ url: 'https://x.example.com', headers: {} }] },
        };
        await store.saveDestination(destination);
        assert.deepEqual(await store.loadCatalog(), { sources: [{ id: 's', name: 'S2', writeKey: 'k2' }], destinations: [destination] });
        await store.deleteSource('s');
        await store.deleteDestination('d');
        assert.deepEqual(await store.loadCatalog(), { sources: [], destinations: [] });
        assert.equal(await store.getSetting('k'), null);
        await store.setSetting('k', 'v1');
        await store.setSetting('k', 'v2');
        assert.equal(await store.getSetting('k'), 'v2');
      }));

    test('S10 completions recorded together: one the database refuses costs the others nothing', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a'), event('b'), event('c')], rejections: [] });
        const jobs = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 10 });
        assert.equal(jobs.length, 3);
        const ok = attempt({ statusCode: 200, errorClass: null, errorMessage: null, responseBody: 'ok' });
        // A time beyond PostgreSQL's bigint column: it refuses this one completion (SQLite keeps it).
        const outcomes = await Promise.allSettled(
          jobs.map((j, i) =>
            store.complete({ id: j.id, owner: 'w', nowMs: t0 + 1, firstAttemptAtMs: i === 1 ? 1e20 : t0, attempts: [ok], outcome: { status: 'succeeded' } }),
          ),
        );
        assert.deepEqual(outcomes[0], { status: 'fulfilled', value: true });
        assert.deepEqual(outcomes[2], { status: 'fulfilled', value: true });
        if (store.kind === 'postgres') assert.equal(outcomes[1]!.status, 'rejected');
        else assert.deepEqual(outcomes[1], { status: 'fulfilled', value: true });
        for (const i of [0, 2]) {
          const detail = (await store.getDelivery(jobs[i]!.id))!;
          assert.equal(detail.delivery.status, 'succeeded');
          assert.equal(detail.attempts.length, 1);
        }
      }));

    test('S11 a lease that ran out still counts for its worker as long as no one else took the job', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a'), event('b')], rejections: [] });
        const [a, b] = await store.claim({ destinationId: 'd1', owner: 'w1', nowMs: t0, leaseMs: 1000, limit: 10 });
        assert.equal(await store.nextDueAt(['d1']), t0 + 1000);
        const ok = attempt({ statusCode: 200, errorClass: null, errorMessage: null });
        assert.equal(
          await store.complete({ id: a!.id, owner: 'w1', nowMs: t0 + 5000, firstAttemptAtMs: t0, attempts: [ok], outcome: { status: 'succeeded' } }),
          true,
        );
        assert.equal(await store.nextDueAt(['d1']), t0 + 1000, 'b is still held, its lease run out: due at once');
        assert.deepEqual(
          (await store.claim({ destinationId: 'd1', owner: 'w2', nowMs: t0 + 5001, leaseMs: 1000, limit: 10 })).map((j) => j.id),
          [b!.id],
        );
        assert.equal(await store.releaseLeases('w1', t0 + 5002), 0, 'w1 holds nothing any more');
        assert.equal(await store.releaseLeases('w2', t0 + 5002), 1);
        assert.ok((await store.nextDueAt(['d1']))! <= t0 + 5002, 'released: due at once');
      }));

    test('S12 a held job purged by a deletion request: its notice is sent at once, the late outcome lands nowhere', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a')], rejections: [] });
        const [held] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 10 });
        await store.createRegulation({ id: 'reg_held', userIds: ['u1'], sourceIds: null, nowMs: t0 + 1 });
        // On SQLite the notice may take the purged row's id (the highest one).
        await store.executeRegulation({ id: 'reg_held', noticesFor: noticesTo([], 'd1'), nowMs: t0 + 2 });
        assert.equal(await store.nextDueAt(['d1']), t0 + 2);
        const [notice] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 3, leaseMs: 60_000, limit: 10 });
        assert.equal(notice!.kind, 'delete', 'not hidden behind the purged job');
        const ok = attempt({ statusCode: 200, errorClass: null, errorMessage: null, responseBody: 'echo of u1' });
        assert.equal(
          await store.complete({
            id: held!.id,
            owner: 'w',
            createdAtMs: held!.createdAtMs,
            nowMs: t0 + 4,
            firstAttemptAtMs: t0,
            attempts: [ok],
            outcome: { status: 'succeeded' },
          }),
          false,
        );
        const detail = (await store.getDelivery(notice!.id))!;
        assert.equal(detail.delivery.status, 'pending', "the purged job's outcome is not the notice's");
        assert.deepEqual(detail.attempts, [], 'and its response is logged nowhere');
        assert.equal(
          await store.complete({
            id: notice!.id,
            owner: 'w',
            createdAtMs: notice!.createdAtMs,
            nowMs: t0 + 5,
            firstAttemptAtMs: t0 + 3,
            attempts: [ok],
            outcome: { status: 'succeeded' },
          }),
          true,
        );
      }));

    test('S14 text a store cannot keep as it is (a lone surrogate, a NUL) is recorded with U+FFFD in its place', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a')], rejections: [] });
        const [job] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 10 });
        const broken = attempt({ errorMessage: 'HTTP 503 \ud800', responseBody: 'busy \udc00 \u0000' });
        const kept = await store.complete({
          id: job!.id,
          owner: 'w',
          nowMs: t0 + 1,
          firstAttemptAtMs: t0,
          attempts: [broken],
          outcome: { status: 'pending', nextAttemptAtMs: t0 + 1000, lastError: 'HTTP 503 \ud800' },
        });
        assert.equal(kept, true);
        const detail = (await store.getDelivery(job!.id))!;
        assert.equal(detail.delivery.lastError, 'HTTP 503 \ufffd');
        assert.equal(detail.attempts[0]!.errorMessage, 'HTTP 503 \ufffd');
        assert.equal(detail.attempts[0]!.responseBody, 'busy \ufffd \ufffd');
      }));

    test('S15 an outcome counts once: a second completion of the job, or one after its destination was deleted, is refused', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a'), event('b')], rejections: [] });
        const [a, b] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 10 });
        const ok = attempt({ statusCode: 200, errorClass: null, errorMessage: null });
        const done = { owner: 'w', nowMs: t0 + 1, firstAttemptAtMs: t0, attempts: [ok], outcome: { status: 'succeeded' as const } };
        assert.equal(await store.complete({ id: a!.id, ...done }), true);
        assert.equal(await store.complete({ id: a!.id, ...done }), false, 'the same outcome again');
        assert.equal((await store.getDelivery(a!.id))!.delivery.attemptCount, 1);
        assert.equal(await store.abandonPending('d1', t0 + 2), 1);
        assert.equal(await store.complete({ id: b!.id, ...done }), false, 'its destination was deleted while it was out');
        assert.equal((await store.getDelivery(b!.id))!.delivery.status, 'dead');
      }));

    test("S13b a dead-lettered delete notice stays, replayable, with its attempts; a deleted destination's notices go with it, pending or dead", () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a')], rejections: [] });
        const notice = (destinationId: string, userId: string) => ({
          destinationId,
          sourceId: 'app',
          kind: 'delete' as const,
          userId,
          body: `{"type":"delete","userId":"${userId}"}`,
        });
        await store.enqueue([notice('d1', 'u1'), notice('d1', 'u2'), notice('d2', 'u3')], t0);
        const deadLetter = async (destinationId: string, userId: string) => {
          const job = (await store.claim({ destinationId, owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 10 })).find(
            (j) => j.kind === 'delete' && j.userId === userId,
          )!;
          const failed = attempt({ statusCode: 404, responseBody: job.body });
          await store.complete({
            id: job.id,
            owner: 'w',
            createdAtMs: job.createdAtMs,
            kind: 'delete',
            nowMs: t0 + 1,
            firstAttemptAtMs: t0,
            attempts: [failed],
            outcome: { status: 'dead', reason: 'non_retryable_response', lastError: 'HTTP 404' },
          });
          await store.releaseLeases('w', t0 + 1);
          return job.id;
        };
        const deadOfD1 = await deadLetter('d1', 'u1');
        const deadOfD2 = await deadLetter('d2', 'u3');
        const kept = (await store.getDelivery(deadOfD2))!;
        assert.deepEqual([kept.delivery.status, kept.delivery.userId, kept.attempts.length], ['dead', 'u3', 1], 'kept to be replayed');

        assert.equal(await store.abandonPending('d1', t0 + 2), 2, 'the event delivery dead-lettered, the pending notice deleted');
        assert.equal(await store.getDelivery(deadOfD1), null);
        const left = await store.listDeliveries({ limit: 10 });
        assert.deepEqual(
          left.map((d) => [d.destinationId, d.kind, d.status, d.userId]),
          [
            ['d1', 'event', 'dead', 'u1'],
            ['d2', 'delete', 'dead', 'u3'],
          ],
        );
        assert.equal(await store.replay({ ids: [deadOfD2] }, t0 + 3), 1);
        assert.equal((await store.getDelivery(deadOfD2))!.delivery.status, 'pending');
      }));

    test('S13 jobs held when their destination is deleted, then replayed: claimable at once, the old outcome refused', () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a')], rejections: [] });
        const [held] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 10 });
        assert.equal(await store.abandonPending('d1', t0 + 1), 1);
        assert.equal(await store.replay({ destinationId: 'd1' }, t0 + 2), 1);
        const [again] = await store.claim({ destinationId: 'd1', owner: 'x', nowMs: t0 + 3, leaseMs: 60_000, limit: 10 });
        assert.equal(again?.id, held!.id);
        const ok = attempt({ statusCode: 200, errorClass: null, errorMessage: null });
        assert.equal(
          await store.complete({
            id: held!.id,
            owner: 'w',
            createdAtMs: held!.createdAtMs,
            nowMs: t0 + 4,
            firstAttemptAtMs: t0,
            attempts: [ok],
            outcome: { status: 'succeeded' },
          }),
          false,
        );
        assert.equal((await store.getDelivery(held!.id))!.delivery.status, 'pending');
      }));

    test("S16 a delivery's attempts read back in the order they were made: a late one of a lost lease, the first kept, a retry", () =>
      withStore(async (store) => {
        await store.ingest({ receivedAtMs: t0, events: [event('a')], rejections: [] });
        const [lost] = await store.claim({ destinationId: 'd1', owner: 'w1', nowMs: t0, leaseMs: 1000, limit: 1 });
        const [job] = await store.claim({ destinationId: 'd1', owner: 'w2', nowMs: t0 + 1000, leaseMs: 60_000, limit: 1 });
        const at = (url: string, startedAtMs: number, statusCode: number) => attempt({ url, startedAtMs, statusCode });
        // w1's attempt began before its lease ran out, and is recorded after w2 took the job.
        assert.equal(
          await store.complete({
            id: lost!.id,
            owner: 'w1',
            nowMs: t0 + 1001,
            firstAttemptAtMs: t0 + 10,
            attempts: [at('https://w1', t0 + 10, 503)],
            outcome: { status: 'pending', nextAttemptAtMs: t0 + 3000, lastError: 'HTTP 503' },
          }),
          false,
        );
        const retry = { status: 'pending' as const, nextAttemptAtMs: t0 + 3000, lastError: 'HTTP 503' };
        const timedOut = attempt({
          url: 'https://w2-b',
          startedAtMs: t0 + 1001,
          latencyMs: 5000,
          statusCode: null,
          errorClass: 'timeout',
          errorMessage: 'no response head within 5000 ms',
          responseBody: null,
        });
        assert.equal(
          await store.complete({
            id: job!.id,
            owner: 'w2',
            nowMs: t0 + 1002,
            firstAttemptAtMs: t0 + 1001,
            attempts: [at('https://w2', t0 + 1001, 503), timedOut],
            outcome: retry,
          }),
          true,
        );
        const [again] = await store.claim({ destinationId: 'd1', owner: 'w2', nowMs: t0 + 3000, leaseMs: 60_000, limit: 1 });
        assert.equal(
          await store.complete({
            id: again!.id,
            owner: 'w2',
            nowMs: t0 + 3001,
            firstAttemptAtMs: t0 + 1001,
            attempts: [at('https://w2', t0 + 3000, 200)],
            outcome: { status: 'succeeded' },
          }),
          true,
        );
        const detail = (await store.getDelivery(job!.id))!;
        assert.equal(detail.delivery.attemptCount, 2);
        assert.deepEqual(
          detail.attempts.map((x) => [x.url, x.startedAt, x.statusCode]),
          [
            ['https://w1', new Date(t0 + 10).toISOString(), 503],
            ['https://w2', new Date(t0 + 1001).toISOString(), 503],
            ['https://w2-b', new Date(t0 + 1001).toISOString(), null],
            ['https://w2', new Date(t0 + 3000).toISOString(), 200],
          ],
        );
        // Every field, the nulls too, whichever way each was kept.
        assert.deepEqual(detail.attempts[1], {
          url: 'https://w2',
          startedAt: new Date(t0 + 1001).toISOString(),
          latencyMs: 12,
          statusCode: 503,
          errorClass: 'http',
          errorMessage: 'HTTP 503',
          responseBody: 'busy',
          trigger: 'scheduled',
        });
        assert.deepEqual(detail.attempts[2], {
          url: 'https://w2-b',
          startedAt: new Date(t0 + 1001).toISOString(),
          latencyMs: 5000,
          statusCode: null,
          errorClass: 'timeout',
          errorMessage: 'no response head within 5000 ms',
          responseBody: null,
          trigger: 'scheduled',
        });
      }));

    test('S17 a store is ready while open, and no longer once closed', async () => {
      const { store, cleanup } = await backend.open();
      try {
        await store.checkReady();
      } finally {
        await store.close();
      }
      await assert.rejects(store.checkReady());
      await cleanup();
    });
  });
}

/** A fresh directory for one SQLite file, removed afterwards. */
async function withSqlitePath(fn: (path: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-store-'));
  try {
    await fn(join(dir, 'ferry.db'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A store and a second connection to its file (the lock guards ferry.db.lock, not the database), as another program would have. */
function withStoreAndOther(fn: (store: SqliteStore, other: Database.Database) => Promise<void>): Promise<void> {
  return withSqlitePath(async (path) => {
    const store = new SqliteStore({ path });
    const other = new Database(path);
    try {
      await fn(store, other);
    } finally {
      other.close();
      await store.close();
    }
  });
}

describe('SQLite store: one process per file, leases in memory', () => {
  test('readiness follows writes: not ready after a commit a lock held elsewhere refused, ready again once a test write succeeds', () =>
    withStoreAndOther(async (store, other) => {
      await store.checkReady();
      other.prepare('BEGIN IMMEDIATE').run();
      try {
        await assert.rejects(store.ingest({ receivedAtMs: t0, events: [event('a')], rejections: [] }), { code: 'SQLITE_BUSY' });
        await assert.rejects(store.checkReady(), { code: 'SQLITE_BUSY' }, 'reads would go on; the test write fails');
      } finally {
        other.prepare('COMMIT').run();
      }
      await store.checkReady();
      assert.deepEqual(await store.ingest({ receivedAtMs: t0, events: [event('a')], rejections: [] }), { inserted: 1, duplicates: 0, deliveries: 1 });
    }));

  test('the WAL is truncated at most once per interval, after deletion requests and delivered notices alike', () =>
    withSqlitePath(async (path) => {
      const clock = new ManualClock(t0);
      const store = new SqliteStore({ path, clock, walTruncateIntervalMs: 5000 });
      const walBytes = () => (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);
      try {
        await store.ingest({ receivedAtMs: t0, events: [event('a')], rejections: [] });
        await store.reclaimDeleted();
        assert.equal(walBytes(), 0, 'the first one at once');
        await store.enqueue([{ destinationId: 'd1', sourceId: 'app', kind: 'delete', userId: 'u1', body: '{"type":"delete","userId":"u1"}' }], t0);
        const [notice] = await store
          .claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 10 })
          .then((jobs) => jobs.filter((j) => j.kind === 'delete'));
        const ok = attempt({ statusCode: 200, errorClass: null, errorMessage: null });
        await store.complete({
          id: notice!.id,
          owner: 'w',
          createdAtMs: notice!.createdAtMs,
          kind: 'delete',
          nowMs: t0 + 1,
          firstAttemptAtMs: t0,
          attempts: [ok],
          outcome: { status: 'succeeded' },
        });
        const requested = store.reclaimDeleted();
        for (let i = 0; i < 5; i += 1) await turn();
        assert.ok(walBytes() > 0, 'the delivered notice and the request within the interval wait for its end');
        clock.advance(5000);
        await requested;
        assert.equal(walBytes(), 0, 'one truncation for both at the end of the interval');
      } finally {
        await store.close();
      }
    }));

  test('claims in a backlog read on after the last job claimed; jobs before it that are free again come back within a few claims', () =>
    withSqlitePath(async (path) => {
      const store = new SqliteStore({ path });
      try {
        await store.ingest({ receivedAtMs: t0, events: Array.from({ length: 100 }, (_, i) => event(`m${String(i).padStart(3, '0')}`)), rejections: [] });
        const claim = async (nowMs: number, limit: number, leaseMs = 60_000) =>
          (await store.claim({ destinationId: 'd1', owner: 'w', nowMs, leaseMs, limit })).map((j) => Number(j.messageId!.slice(1)));
        const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
        assert.deepEqual(await claim(t0, 10, 1000), range(0, 10), 'held for one second');
        assert.deepEqual(await claim(t0, 10), range(10, 10));
        // The first ten are free again: a claim that reads on does not see them, ...
        assert.deepEqual(await claim(t0 + 5000, 10), range(20, 10));
        // ... one that finds fewer than it asked for reads from the start, skipping what is held.
        const rest = await claim(t0 + 5000, 200);
        assert.deepEqual(rest, [...range(0, 10), ...range(30, 70)]);
        assert.equal(new Set(rest).size, rest.length);
        // Every eighth claim reads from the start too, even in a long backlog.
        await store.ingest({
          receivedAtMs: t0 + 1,
          events: Array.from({ length: 200 }, (_, i) => event(`m${100 + i}`, { receivedAtMs: t0 + 1 })),
          rejections: [],
        });
        assert.deepEqual(await claim(t0 + 5000, 5, 1000), range(100, 5), 'held for one second');
        const seen: number[] = [];
        for (let i = 0; i < 8; i++) seen.push(...(await claim(t0 + 7000, 5)));
        assert.ok(
          range(100, 5).every((n) => seen.includes(n)),
          `the five whose lease ran out were claimed again within eight claims: ${seen.join(',')}`,
        );
        assert.equal(new Set(seen).size, seen.length, 'no job claimed twice');
      } finally {
        await store.close();
      }
    }));

  test('migration 3 forgets the user ids of requests already done and the rejections that quoted a refused value', () =>
    withSqlitePath(async (path) => {
      const old = new Database(path);
      for (const m of sqliteMigrations.slice(0, 2)) old.exec(m.sql);
      old.pragma('user_version = 2');
      old.exec(`INSERT INTO regulations (id, user_ids, source_ids, status, created_at) VALUES
        ('reg_done', '["victim-42","u2"]', NULL, 'done', 1), ('reg_pending', '["u3"]', NULL, 'pending', 2);
        INSERT INTO rejections (source_id, batch_index, code, message, received_at) VALUES
        ('app', 0, 'invalid_timestamp', 'The message \`timestamp\` is not an ISO 8601 date-time: "victim-42@example.com".', 1),
        ('app', 1, 'missing_event', 'A track call needs a non-empty \`event\`.', 1);`);
      old.close();
      const store = new SqliteStore({ path });
      try {
        const done = (await store.getRegulation('reg_done'))!;
        assert.deepEqual([done.userIds, done.userCount], [[], 2]);
        const pending = (await store.getRegulation('reg_pending'))!;
        assert.deepEqual([pending.userIds, pending.userCount], [['u3'], 1]);
        assert.deepEqual(
          (await store.listRejections({ limit: 10 })).map((r) => r.code),
          ['missing_event'],
        );
      } finally {
        await store.close();
      }
    }));

  test('a claim that reads on within one due time seeks to the last job claimed, rather than reading that due time from its first job', () =>
    withStoreAndOther(async (store, other) => {
      // 300 jobs due at one time, as a replay leaves them: claims of 50 under live leases read on.
      await store.enqueue(
        Array.from({ length: 300 }, (_, i) => ({ destinationId: 'd1', kind: 'event' as const, body: '{}', messageId: `m${i}` })),
        t0,
      );
      const claimed: number[] = [];
      for (let i = 0; i < 6; i++)
        claimed.push(...(await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 50 })).map((j) => j.id));
      assert.equal(new Set(claimed).size, 300, 'every job once');
      assert.deepEqual(
        claimed,
        [...claimed].sort((a, b) => a - b),
        'in due order, then id order',
      );
      // The plan: the rest of the cursor's due time is one seek by id within it (the old
      // row-value bound read every job of that due time from the first, at every claim).
      const plan = other.prepare(`EXPLAIN QUERY PLAN ${claimAfterSql}`).all({ destination: 'd1', now: t0, due: t0, id: claimed[49], limit: 50 }) as {
        detail: string;
      }[];
      const details = plan.map((p) => p.detail);
      assert.ok(
        details.some((d) => d.includes('deliveries_due (destination_id=? AND next_attempt_at=? AND rowid>?)')),
        details.join('\n'),
      );
      assert.ok(
        details.every((d) => !/SCAN deliveries|TEMP B-TREE/.test(d)),
        details.join('\n'),
      );
    }));

  test("a claim that reads on takes nothing not yet due, even at the cursor's own due time (a clock gone back)", () =>
    withSqlitePath(async (path) => {
      const store = new SqliteStore({ path });
      try {
        await store.ingest({
          receivedAtMs: t0 + 1000,
          events: Array.from({ length: 6 }, (_, i) => event(`m${i}`, { receivedAtMs: t0 + 1000 })),
          rejections: [],
        });
        assert.equal((await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 1000, leaseMs: 60_000, limit: 2 })).length, 2);
        // The clock went back a second: the rest of the cursor's due time is not due yet.
        assert.deepEqual(await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 2 }), []);
        assert.equal((await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 1000, leaseMs: 60_000, limit: 2 })).length, 2);
      } finally {
        await store.close();
      }
    }));

  test('a second store on the same file is refused while the first is open, and allowed once it closes', () =>
    withSqlitePath(async (path) => {
      const first = new SqliteStore({ path });
      assert.throws(() => new SqliteStore({ path }), /in use by another Ferry process/);
      assert.throws(() => new SqliteStore({ path }), /in use by another Ferry process/, 'a refused attempt leaves the lock with its owner');
      await first.close();
      const second = new SqliteStore({ path });
      await second.close();
    }));

  test('a store that fails to open leaves no lock behind', () =>
    withSqlitePath(async (path) => {
      writeFileSync(path, 'not a database, but long enough for SQLite to read a header from it'.repeat(2));
      // The driver's words alone name no file: the error names the store, and keeps the driver's code.
      assert.throws(
        () => new SqliteStore({ path }),
        (error: Error & { code?: string }) => {
          assert.equal(error.code, 'SQLITE_NOTADB');
          assert.ok(error.message.startsWith(`cannot open the SQLite store at ${path}: `), error.message);
          return true;
        },
      );
      rmSync(path);
      await new SqliteStore({ path }).close();
    }));

  test('a completion refused by the database leaves its job held until the lease runs out, not due again at once', () =>
    withStoreAndOther(async (store, other) => {
      await store.ingest({ receivedAtMs: t0, events: [event('a')], rejections: [] });
      const [job] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 1000, limit: 10 });
      other.exec(`CREATE TRIGGER refuse BEFORE INSERT ON attempts BEGIN SELECT RAISE(ABORT, 'refused'); END`);
      const ok = attempt({ statusCode: 200, errorClass: null, errorMessage: null });
      await assert.rejects(
        store.complete({ id: job!.id, owner: 'w', nowMs: t0 + 1, firstAttemptAtMs: t0, attempts: [ok], outcome: { status: 'succeeded' } }),
        /refused/,
      );
      assert.deepEqual(await store.claim({ destinationId: 'd1', owner: 'x', nowMs: t0 + 999, leaseMs: 1000, limit: 10 }), [], 'still held');
      assert.equal(await store.nextDueAt(['d1']), t0 + 1000);
      other.exec('DROP TRIGGER refuse');
      assert.equal(
        (await store.claim({ destinationId: 'd1', owner: 'x', nowMs: t0 + 1000, leaseMs: 1000, limit: 10 })).length,
        1,
        'due again when the lease runs out',
      );
    }));

  test('while outcomes cannot be recorded (the database locked by another process), claims stop, and resume when it is free', () =>
    withStoreAndOther(async (store, other) => {
      await store.ingest({ receivedAtMs: t0, events: [event('a'), event('b')], rejections: [] });
      const [job] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 1000, limit: 1 });
      other.prepare('BEGIN IMMEDIATE').run();
      const ok = attempt({ statusCode: 200, errorClass: null, errorMessage: null });
      await assert.rejects(store.complete({ id: job!.id, owner: 'w', nowMs: t0 + 1, firstAttemptAtMs: t0, attempts: [ok], outcome: { status: 'succeeded' } }), {
        code: 'SQLITE_BUSY',
      });
      // Reading would still work: without the stop, b would be sent now and a again at t0 + 1000, with no outcome recorded.
      await assert.rejects(store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 2000, leaseMs: 1000, limit: 10 }), { code: 'SQLITE_BUSY' });
      other.prepare('COMMIT').run();
      await assert.rejects(
        store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 2999, leaseMs: 1000, limit: 10 }),
        { code: 'SQLITE_BUSY' },
        'one test write a second',
      );
      assert.equal((await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 3000, leaseMs: 1000, limit: 10 })).length, 2);
    }));

  test('a store opened again without its leases released (as after a crash) finds those jobs due at once', () =>
    withSqlitePath(async (path) => {
      const lost = new SqliteStore({ path });
      await lost.ingest({ receivedAtMs: t0, events: [event('a'), event('b')], rejections: [] });
      assert.equal((await lost.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 10 })).length, 2);
      // What a crash leaves: the file as committed, no release of the leases.
      await lost.close();
      const store = new SqliteStore({ path });
      try {
        assert.equal(await store.nextDueAt(['d1']), t0);
        assert.equal((await store.claim({ destinationId: 'd1', owner: 'w2', nowMs: t0 + 1, leaseMs: 60_000, limit: 10 })).length, 2);
      } finally {
        await store.close();
      }
    }));
});

/** The node types of a plan from EXPLAIN (FORMAT JSON), with the index or table each scan reads. */
function planNodes(plan: { 'Node Type': string; 'Index Name'?: string; 'Relation Name'?: string; Plans?: unknown[] }): string[] {
  const own = plan['Index Name']
    ? `${plan['Node Type']} on ${plan['Index Name']}`
    : plan['Relation Name']
      ? `${plan['Node Type']} of ${plan['Relation Name']}`
      : plan['Node Type'];
  return [own, ...(plan.Plans ?? []).flatMap((p) => planNodes(p as typeof plan))];
}

describe('PostgreSQL store: a deletion request and the completions beside it', () => {
  /**
   * A store in a fresh schema whose job of user `gone` was claimed by w, whose lease ran out,
   * then by x; and a second connection, `other`, for the test to act on beside the store.
   */
  async function withLostLease(fn: (store: PgStore, other: pg.Client, lost: ClaimedDelivery, url: string, schema: string) => Promise<void>) {
    const url = await postgresUrl();
    const schema = uniqueSchema();
    const store = await PgStore.open({ connectionString: url, schema, poolSize: 2 });
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await store.ingest({ receivedAtMs: t0, events: [event('a', { userId: 'gone' })], rejections: [] });
      const [lost] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 1000, limit: 1 });
      assert.equal((await store.claim({ destinationId: 'd1', owner: 'x', nowMs: t0 + 2000, leaseMs: 60_000, limit: 1 }))[0]!.id, lost!.id);
      await fn(store, other, lost!, url, schema);
    } finally {
      await other.query('ROLLBACK').catch(() => {});
      await other.end();
      await store.close();
      await dropSchema(url, schema);
    }
  }

  test('a completion whose statement began before a purge committed logs no attempt for the purged delivery', () =>
    withLostLease(async (store, blocker, lost, url, schema) => {
      // w also holds a second job.
      await store.ingest({ receivedAtMs: t0 + 2000, events: [event('b', { userId: 'kept', receivedAtMs: t0 + 2000 })], rejections: [] });
      const [held] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 2000, leaseMs: 60_000, limit: 1 });
      // The held job's queue row is locked elsewhere: w's completion statement takes its
      // snapshot, then waits for that row.
      const blockerPid = (await blocker.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      await blocker.query(`BEGIN; SELECT 1 FROM ${schema}.delivery_queue WHERE delivery_id = ${held!.id} FOR UPDATE`);
      const outcome = (id: number) => ({
        id,
        owner: 'w',
        nowMs: t0 + 2001,
        firstAttemptAtMs: t0 + 2001,
        outcome: { status: 'succeeded' as const },
        attempts: [
          {
            url: 'http://r/hooks',
            startedAtMs: t0 + 2001,
            latencyMs: 1,
            statusCode: 200,
            errorClass: null,
            errorMessage: null,
            responseBody: 'echo of the user',
            trigger: 'scheduled' as const,
          },
        ],
      });
      const completed = Promise.all([store.complete(outcome(lost.id)), store.complete(outcome(held!.id))]);
      await waitForLockWait(url, blockerPid);
      // Meanwhile the user of the lost job is purged, and that commits.
      await store.createRegulation({ id: 'reg_race', userIds: ['gone'], sourceIds: null, nowMs: t0 + 2001 });
      assert.equal((await store.executeRegulation({ id: 'reg_race', noticesFor: () => [], nowMs: t0 + 2002 })).deliveriesDeleted, 1);
      await blocker.query('COMMIT');
      assert.deepEqual(await completed, [false, true], 'the lost lease counts for nothing; the held job is done');
      const { rows } = await blocker.query(`SELECT delivery_id::int AS id FROM ${schema}.attempts ORDER BY id`);
      assert.deepEqual(rows, [], 'no attempt is left of the purged delivery');
      assert.deepEqual(
        (await store.getDelivery(held!.id))!.attempts.map((a) => a.responseBody),
        ['echo of the user'],
        'the other is logged, in its row',
      );
    }));

  test('a purge that meets a completion logging an attempt for its delivery waits for it, and deletes that attempt too', () =>
    withLostLease(async (store, completion, lost, url, schema) => {
      // w's completion of the job whose lease it lost logs its attempt, and has not committed yet.
      await completion.query(`SET search_path = ${schema}`);
      await completion.query('BEGIN');
      const a = [{ u: 'http://r/hooks', s: t0 + 2001, l: 1, c: 200, r: 'echo of the user', t: 'scheduled' }];
      const jobs = [{ i: lost.id, o: 'w', f: t0 + 2001, s: 'succeeded', n: null, c: t0 + 2001, r: null, e: null, a }];
      assert.deepEqual((await completion.query(completeSql, [JSON.stringify(jobs)])).rows, [{ id: String(lost.id) }], 'not kept: x holds it');
      const pid = (await completion.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      await store.createRegulation({ id: 'reg_after', userIds: ['gone'], sourceIds: null, nowMs: t0 + 2001 });
      const purge = store.executeRegulation({ id: 'reg_after', noticesFor: () => [], nowMs: t0 + 2002 });
      await waitForLockWait(url, pid, 'DELETE FROM deliveries%');
      await completion.query('COMMIT');
      assert.equal((await purge).deliveriesDeleted, 1);
      const { rows } = await completion.query('SELECT count(*)::int AS n FROM attempts');
      assert.equal(rows[0].n, 0, 'the attempt committed while the purge waited is deleted with the rest');
    }));
});

describe('PostgreSQL store: the first attempt kept in the delivery row', () => {
  async function withPgStore(fn: (store: PgStore, client: pg.Client) => Promise<void>) {
    const url = await postgresUrl();
    const schema = uniqueSchema();
    const store = await PgStore.open({ connectionString: url, schema, poolSize: 1 });
    const client = new pg.Client({ connectionString: url, options: completionPlanner });
    await client.connect();
    try {
      await client.query(`SET search_path = ${schema}`);
      await fn(store, client);
    } finally {
      await client.end();
      await store.close();
      await dropSchema(url, schema);
    }
  }

  test('a delivery done at its first attempt adds no attempt row; a lost lease and later attempts add theirs', () =>
    withPgStore(async (store, client) => {
      await store.ingest({ receivedAtMs: t0, events: [event('a'), event('b')], rejections: [] });
      const [a, b] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 1000, limit: 2 });
      const ok = attempt({ statusCode: 200, errorClass: null, errorMessage: null, responseBody: null });
      assert.equal(
        await store.complete({ id: a!.id, owner: 'w', nowMs: t0 + 1, firstAttemptAtMs: t0, attempts: [ok, attempt()], outcome: { status: 'succeeded' } }),
        true,
      );
      const [taken] = await store.claim({ destinationId: 'd1', owner: 'x', nowMs: t0 + 1000, leaseMs: 60_000, limit: 1 });
      assert.equal(taken!.id, b!.id);
      assert.equal(
        await store.complete({
          id: b!.id,
          owner: 'w',
          nowMs: t0 + 1001,
          firstAttemptAtMs: t0,
          attempts: [attempt()],
          outcome: { status: 'pending', nextAttemptAtMs: t0 + 3000, lastError: 'HTTP 503' },
        }),
        false,
      );
      assert.equal(
        await store.complete({
          id: b!.id,
          owner: 'x',
          nowMs: t0 + 1002,
          firstAttemptAtMs: t0 + 1001,
          attempts: [attempt({ startedAtMs: t0 + 1001 })],
          outcome: { status: 'pending', nextAttemptAtMs: t0 + 3000, lastError: 'HTTP 503' },
        }),
        true,
      );
      const [again] = await store.claim({ destinationId: 'd1', owner: 'x', nowMs: t0 + 3000, leaseMs: 60_000, limit: 1 });
      assert.equal(
        await store.complete({
          id: again!.id,
          owner: 'x',
          nowMs: t0 + 3001,
          firstAttemptAtMs: t0 + 1001,
          attempts: [{ ...ok, startedAtMs: t0 + 3000 }],
          outcome: { status: 'succeeded' },
        }),
        true,
      );
      const { rows } = await client.query(
        `SELECT d.id::int AS id, json_array_length(d.first_attempt_log::json) AS inline, (SELECT count(*)::int FROM attempts WHERE delivery_id = d.id) AS logged
         FROM deliveries d ORDER BY d.id`,
      );
      assert.deepEqual(rows, [
        { id: a!.id, inline: 2, logged: 0 },
        { id: b!.id, inline: 1, logged: 2 },
      ]);
      assert.deepEqual(
        (await store.getDelivery(b!.id))!.attempts.map((x) => x.startedAt),
        [t0, t0 + 1001, t0 + 3000].map((t) => new Date(t).toISOString()),
      );
    }));

  for (const bodyBytes of [200, 350, 500])
    test(`with bodies of ${bodyBytes} bytes, the outcomes of every row of a page, recorded in one statement, are HOT updates`, () =>
      withPgStore(async (store, client) => {
        const body = (i: number) => JSON.stringify({ n: i, pad: 'x'.repeat(bodyBytes) }).slice(0, bodyBytes - 2) + '"}';
        await store.enqueue(
          Array.from({ length: 60 }, (_, i) => ({
            destinationId: 'd1',
            kind: 'event' as const,
            body: body(i),
            messageId: `message-${i}`,
            userId: `user-${i}`,
            sourceId: 'app',
          })),
          t0,
        );
        const claimed = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 60 });
        assert.equal(claimed.length, 60);
        // What the worker records for a success at a URL of ordinary length.
        const a = [
          toLogEntry({
            url: 'https://hooks.example.com/ferry/events',
            startedAtMs: t0,
            latencyMs: 35,
            statusCode: 200,
            errorClass: null,
            errorMessage: null,
            responseBody: '{"ok":true}',
            trigger: 'scheduled',
          }),
        ];
        const jobs = claimed.map((j) => ({ i: j.id, o: 'w', f: t0, s: 'succeeded', n: null, c: t0 + 40, r: null, e: null, a }));
        await client.query('BEGIN');
        assert.deepEqual((await client.query(completeSql, [JSON.stringify(jobs)])).rows, []);
        const counts = await client.query<{ updated: string; hot: string }>(
          `SELECT pg_stat_get_xact_tuples_updated('deliveries'::regclass) AS updated, pg_stat_get_xact_tuples_hot_updated('deliveries'::regclass) AS hot`,
        );
        assert.deepEqual(counts.rows[0], { updated: '60', hot: '60' });
        assert.deepEqual((await client.query('SELECT count(*)::int AS n FROM attempts')).rows, [{ n: 0 }]);
        await client.query('COMMIT');
      }));
});

/**
 * Resolves once a statement (by default a completion) waits for a lock held by backend
 * `blocker` (bounded).
 * Asked on a connection of its own: inside a transaction, pg_stat_activity keeps showing what
 * it showed first.
 */
async function waitForLockWait(url: string, blocker: number, statement = 'WITH x AS%'): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (let i = 0; i < 5000; i++) {
      const { rows } = await client.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE $2`, [
        blocker,
        statement,
      ]);
      if (rows[0].n > 0) return;
      await new Promise((r) => setImmediate(r));
    }
    throw new Error(`no ${statement} waited for the lock`);
  } finally {
    await client.end();
  }
}

describe('PostgreSQL store: plans that touch only the jobs at hand', () => {
  /**
   * A store with 5,000 pending jobs sharing one due time (what a replay or an audience sync
   * leaves), and `explain`, which plans one of the store's statements with the given settings
   * and returns the plan's nodes. The table is analyzed only if `analyze` says so: a table
   * freshly filled has no statistics yet.
   */
  async function withBacklog(
    statistics: 'current' | 'none' | 'stale',
    fn: (store: PgStore, explain: (sql: string, args: string, settings: string) => Promise<string[]>, schema: string) => Promise<void>,
  ) {
    const url = await postgresUrl();
    const schema = uniqueSchema();
    const store = await PgStore.open({ connectionString: url, schema, poolSize: 1 });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`SET search_path = ${schema}`);
      // Statistics only as the test says: autovacuum must not analyze the table meanwhile.
      for (const table of ['deliveries', 'delivery_queue']) await client.query(`ALTER TABLE ${table} SET (autovacuum_enabled = off)`);
      const jobs = (from: number) =>
        Array.from({ length: 5000 }, (_, i) => ({ destinationId: 'd1', kind: 'event' as const, body: `{"n":${from + i}}`, messageId: `m${from + i}` }));
      if (statistics === 'stale') {
        // Analyzed while every job was done; the backlog came after.
        await store.enqueue(jobs(-5000), t0 - 1);
        await client.query(`UPDATE deliveries SET status = 'succeeded', completed_at = ${t0}`);
        await client.query(`DELETE FROM delivery_queue`);
        await client.query(`ANALYZE deliveries, delivery_queue`);
      }
      await store.enqueue(jobs(0), t0);
      if (statistics === 'current') await client.query(`ANALYZE deliveries, delivery_queue`);
      await fn(
        store,
        async (sql, args, settings) => {
          // The connection options of the pool that runs it (`-c name=value ...`), set here.
          const set = [...settings.matchAll(/-c (\w+)=(\w+)/g)].map(([, name, value]) => [name!, value!] as const);
          for (const [name, value] of set) await client.query(`SET ${name} = ${value}`);
          await client.query(`PREPARE statement AS ${sql}`);
          try {
            await client.query('BEGIN');
            const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: Parameters<typeof planNodes>[0] }] }>(
              `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE statement(${args})`,
            );
            return planNodes(rows[0]!['QUERY PLAN'][0].Plan);
          } finally {
            await client.query('ROLLBACK');
            await client.query('DEALLOCATE statement');
            for (const [name] of set) await client.query(`RESET ${name}`);
          }
        },
        schema,
      );
    } finally {
      await client.end();
      await store.close();
      await dropSchema(url, schema);
    }
  }

  test('a store of an earlier version (migration 2) is upgraded in place: its pending jobs queued, leases kept, dead letters listed', async () => {
    const url = await postgresUrl();
    const schema = uniqueSchema();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      // What migrations 1 and 2 left, with one job of each kind.
      await client.query(`CREATE SCHEMA ${schema}`);
      await client.query(`SET search_path = ${schema}`);
      await client.query(`CREATE TABLE ferry_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`);
      for (const m of migrations.filter((m) => m.version <= 2)) {
        await client.query(m.sql);
        await client.query(`INSERT INTO ferry_migrations VALUES ($1, 0)`, [m.version]);
      }
      await client.query(
        `INSERT INTO deliveries (destination_id, kind, message_id, body, status, created_at, next_attempt_at, lease_owner, dead_reason) VALUES
           ('d1', 'event', 'due', '{}', 'pending', $1, $1, NULL, NULL),
           ('d1', 'event', 'held', '{}', 'pending', $1, $2, 'old-node', NULL),
           ('d1', 'event', 'sent', '{}', 'succeeded', $1, $1, NULL, NULL),
           ('d1', 'event', 'dead', '{}', 'dead', $1, $1, NULL, 'retry_window_exhausted')`,
        [t0, t0 + 60_000],
      );
      const store = await PgStore.open({ connectionString: url, schema, poolSize: 1 });
      try {
        const { rows } = await client.query<{ indexname: string }>(
          `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'deliveries' ORDER BY 1`,
          [schema],
        );
        assert.deepEqual(
          rows.map((r) => r.indexname),
          // None holds a column that recording an outcome changes (migration 8 added the search's, 10 the dead letters by destination).
          [
            'deliveries_dead',
            'deliveries_dead_destination',
            'deliveries_destination',
            'deliveries_event',
            'deliveries_message',
            'deliveries_not_event',
            'deliveries_pkey',
            'deliveries_source',
            'deliveries_user',
          ],
        );
        const held = await client.query(
          `SELECT q.lease_owner, q.next_attempt_at FROM delivery_queue q JOIN deliveries d ON d.id = q.delivery_id WHERE d.message_id = 'held'`,
        );
        assert.deepEqual(held.rows, [{ lease_owner: 'old-node', next_attempt_at: String(t0 + 60_000) }]);
        assert.deepEqual(
          (await store.listDeliveries({ status: 'pending', limit: 10 })).map((d) => [d.messageId, d.nextAttemptAt]),
          [
            ['due', new Date(t0).toISOString()],
            ['held', new Date(t0 + 60_000).toISOString()],
          ],
        );
        assert.deepEqual(
          (await store.listDeliveries({ status: 'dead', limit: 10 })).map((d) => d.messageId),
          ['dead'],
        );
        assert.deepEqual(
          (await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 120_000, limit: 10 })).map((j) => j.messageId),
          ['due'],
        );
        // The lease taken before the upgrade still holds, and runs out as it would have.
        assert.deepEqual(
          (await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 60_000, leaseMs: 120_000, limit: 10 })).map((j) => j.messageId),
          ['held'],
        );
      } finally {
        await store.close();
      }
    } finally {
      await client.end();
      await dropSchema(url, schema);
    }
  });

  /** A scan of the whole table, or of all its pending jobs, rather than of the jobs at hand (found by id). */
  const readsTheBacklog = (nodes: string[]) =>
    nodes.some((n) => n === 'Seq Scan of deliveries' || n === 'Seq Scan of delivery_queue' || n === 'Bitmap Index Scan on delivery_queue_due');
  const findsById = (nodes: string[]) => nodes.includes('Index Scan on deliveries_pkey') || nodes.includes('Bitmap Index Scan on deliveries_pkey');

  for (const statistics of ['current', 'none', 'stale'] as const)
    test(`a claim reads the due index in its own order, sorting nothing, when thousands of jobs share one due time (statistics: ${statistics})`, () =>
      withBacklog(statistics, async (store, explain) => {
        // Planned for the values given (its first runs), then once for any (a named statement).
        for (const mode of ['force_custom_plan', 'force_generic_plan']) {
          const nodes = await explain(claimSql, `'w', ${t0 + 60_000}, 'd1', ${t0}, 50`, `-c plan_cache_mode=${mode} ${claimPlanner}`);
          const plan = `${mode}: ${nodes.join(', ')}`;
          assert.ok(nodes.includes('Index Scan on delivery_queue_due'), plan);
          assert.ok(nodes.includes('Index Scan on delivery_queue_pkey'), plan);
          assert.ok(!readsTheBacklog(nodes) && !nodes.some((n) => n.includes('Sort')), plan);
          const fetched = await explain(claimedSql, `'{1,2,3}'`, `-c plan_cache_mode=${mode} ${claimPlanner}`);
          assert.ok(findsById(fetched) && !readsTheBacklog(fetched), `${mode}: ${fetched.join(', ')}`);
        }
        const claimed = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 50 });
        assert.deepEqual(
          claimed.map((j) => j.body),
          Array.from({ length: 50 }, (_, i) => `{"n":${i}}`),
          'the first 50, in order',
        );
      }));

  for (const statistics of ['none', 'stale'] as const)
    test(`a completion finds each job by primary key, whatever the statistics (${statistics})`, () =>
      withBacklog(statistics, async (store, explain) => {
        const claimed = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 3 });
        const a = [{ u: 'https://example.com/hook', s: t0, l: 1, c: 200, r: 'ok', t: 'scheduled' }];
        const jobs = claimed.map((j) => ({ i: j.id, o: 'w', f: t0, s: 'succeeded', n: null, c: t0 + 1, r: null, e: null, a }));
        // As the completion pool may plan it: once, for any values (a named statement).
        const nodes = await explain(completeSql, `'${JSON.stringify(jobs)}'`, `-c plan_cache_mode=force_generic_plan ${completionPlanner}`);
        assert.ok(findsById(nodes) && nodes.includes('Index Scan on delivery_queue_pkey'), nodes.join(', '));
        assert.ok(!readsTheBacklog(nodes) && !nodes.some((n) => n.endsWith('on delivery_queue_due')), nodes.join(', '));
      }));

  test('recording outcomes writes each delivery row as a HOT update: a new version beside it, no index entry', () =>
    withBacklog('current', async (store, _explain, schema) => {
      const claimed = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 3 });
      const outcomes = [
        { s: 'succeeded', n: null, c: t0 + 1, r: null, e: null },
        { s: 'pending', n: t0 + 5000, c: null, r: null, e: 'HTTP 503' },
        { s: 'succeeded', n: null, c: t0 + 1, r: null, e: null },
      ];
      const a = [{ u: 'https://example.com/hook', s: t0, l: 1, c: 200, r: 'ok', t: 'scheduled' }];
      const jobs = claimed.map((j, k) => ({ i: j.id, o: 'w', f: t0, ...outcomes[k]!, a }));
      const client = new pg.Client({ connectionString: await postgresUrl(), options: completionPlanner });
      await client.connect();
      try {
        await client.query(`SET search_path = ${schema}`);
        await client.query('BEGIN');
        const { rows } = await client.query(completeSql, [JSON.stringify(jobs)]);
        assert.deepEqual(rows, [], 'every job kept');
        // This transaction's own counts, so nothing else on the server can blur them.
        const counts = await client.query<{ updated: string; hot: string }>(
          `SELECT pg_stat_get_xact_tuples_updated('deliveries'::regclass) AS updated, pg_stat_get_xact_tuples_hot_updated('deliveries'::regclass) AS hot`,
        );
        assert.deepEqual(counts.rows[0], { updated: '3', hot: '3' });
        await client.query('COMMIT');
      } finally {
        await client.end();
      }
      const views = await Promise.all(claimed.map(async (j) => (await store.getDelivery(j.id))!.delivery));
      assert.deepEqual(
        views.map((v) => [v.status, v.nextAttemptAt]),
        [
          ['succeeded', null],
          ['pending', new Date(t0 + 5000).toISOString()],
          ['succeeded', null],
        ],
      );
    }));

  test('the next due time is one seek in the due index, however long the backlog', () =>
    withBacklog('none', async (store, explain) => {
      const nodes = await explain(nextDueSql, `'{d1,d2}'`, '-c plan_cache_mode=force_custom_plan');
      assert.ok(nodes.includes('Index Only Scan on delivery_queue_due') && nodes.includes('Limit'), nodes.join(', '));
      assert.ok(!readsTheBacklog(nodes), nodes.join(', '));
      assert.equal(await store.nextDueAt(['d1', 'd2']), t0);
    }));
});
