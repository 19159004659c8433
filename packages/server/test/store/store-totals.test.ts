import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { PgStore } from '../../src/store/postgres/pg-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { AttemptOutcome } from '../../src/model/attempt.js';
import type { ClaimedDelivery, NewEvent, Store, StoreStats } from '../../src/store/store.js';
import { ManualClock } from '../../src/util/clock.js';
import { openFreshPgStore, stopPostgres } from '../helpers/postgres.js';

after(() => stopPostgres());

const t0 = Date.parse('2026-06-01T00:00:00.000Z');

function event(i: number, destinations: string[], userId = 'u1'): NewEvent {
  const messageId = `m${i}`;
  return {
    sourceId: 'app',
    messageId,
    type: 'track',
    userId,
    event: 'E',
    receivedAtMs: t0 + i * 1000,
    json: JSON.stringify({ messageId }),
    deliveries: destinations.map((destinationId) => ({ destinationId, kind: 'event' as const, body: `{"messageId":"${messageId}"}` })),
  };
}

async function finish(store: Store, job: ClaimedDelivery, outcome: AttemptOutcome, nowMs: number): Promise<void> {
  const ok = outcome.status === 'succeeded';
  const kept = await store.complete({
    id: job.id,
    owner: 'w',
    createdAtMs: job.createdAtMs,
    kind: job.kind,
    nowMs,
    firstAttemptAtMs: nowMs,
    attempts: [
      {
        url: 'http://127.0.0.1:9/hook',
        startedAtMs: nowMs,
        latencyMs: 3,
        statusCode: ok ? 200 : 500,
        errorClass: ok ? null : 'http',
        errorMessage: ok ? null : 'HTTP 500',
        responseBody: null,
        trigger: 'scheduled',
      },
    ],
    outcome,
  });
  assert.ok(kept);
}

async function pruneAll(store: Store, kind: 'events' | 'delivered' | 'deadLetters', cutoffMs: number): Promise<void> {
  let afterId = 0;
  for (;;) {
    const r = await store.retention.pruneBatch({ kind, cutoffMs, afterId, limit: 100 });
    afterId = r.lastId;
    if (r.done) return;
  }
}

/** The totals as the rows themselves say: counted with `COUNT(*)`, as `GET /stats` did before the store kept them. */
type RealCounts = () => Promise<Omit<StoreStats, 'rejections'>>;

const backends: { name: string; open: () => Promise<{ store: Store; real: RealCounts; reopen?: () => Store; cleanup: () => Promise<void> }> }[] = [
  {
    name: 'sqlite',
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'ferry-totals-'));
      const path = join(dir, 'ferry.db');
      const store = new SqliteStore({ path });
      // A reader of its own: the file stays readable by other connections while the store owns it.
      const reader = new Database(path, { readonly: true });
      const real: RealCounts = async () => {
        const deliveries: StoreStats['deliveries'] = { pending: 0, succeeded: 0, dead: 0 };
        for (const r of reader.prepare(`SELECT status, COUNT(*) AS n FROM deliveries GROUP BY status`).all() as { status: 'pending'; n: number }[])
          deliveries[r.status] = r.n;
        return { events: (reader.prepare(`SELECT COUNT(*) AS n FROM events`).get() as { n: number }).n, deliveries };
      };
      return {
        store,
        real,
        reopen: () => new SqliteStore({ path }),
        cleanup: async () => {
          reader.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'postgres',
    open: async () => {
      const { store, cleanup, inSchema } = await openFreshPgStore(4);
      const real: RealCounts = () =>
        inSchema(async (c) => {
          const deliveries: StoreStats['deliveries'] = { pending: 0, succeeded: 0, dead: 0 };
          for (const r of (await c.query<{ status: 'pending'; n: number }>(`SELECT status, COUNT(*)::int AS n FROM deliveries GROUP BY status`)).rows)
            deliveries[r.status] = r.n;
          return { events: (await c.query<{ n: number }>(`SELECT COUNT(*)::int AS n FROM events`)).rows[0]!.n, deliveries };
        });
      return { store, real, cleanup };
    },
  },
];

for (const backend of backends)
  describe(`store totals: ${backend.name}`, () => {
    test('ST01 the totals of stats() equal the rows counted after every kind of write that changes them', async () => {
      const opened = await backend.open();
      let store = opened.store;
      const steps: string[] = [];
      /** Checks the kept totals against the rows, and against the figures the test expects at this step. */
      const check = async (step: string, expected: Omit<StoreStats, 'rejections'> & { rejections?: number }) => {
        steps.push(step);
        const stats = await store.stats();
        assert.deepEqual({ events: stats.events, deliveries: stats.deliveries }, await opened.real(), `${step}: kept totals equal the rows`);
        assert.deepEqual(
          { events: stats.events, deliveries: stats.deliveries, ...(expected.rejections === undefined ? {} : { rejections: stats.rejections }) },
          expected,
          step,
        );
      };
      try {
        await check('empty', { events: 0, deliveries: { pending: 0, succeeded: 0, dead: 0 } });

        // Six events, the first three for two destinations; a duplicate and a rejection add no event.
        await store.ingest({
          receivedAtMs: t0,
          events: [0, 1, 2, 3, 4, 5].map((i) => event(i, i < 3 ? ['d1', 'd2'] : ['d1'], i === 5 ? 'u2' : 'u1')),
          rejections: [],
        });
        await store.ingest({
          receivedAtMs: t0,
          events: [event(0, ['d1', 'd2'])],
          rejections: [{ sourceId: 'app', index: 1, code: 'missing_event', message: 'a track needs event' }],
        });
        await check('ingested', { events: 6, deliveries: { pending: 9, succeeded: 0, dead: 0 }, rejections: 1 });

        // Outcomes: two delivered, one dead letter, one retried (still pending).
        const jobs = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 10_000, leaseMs: 60_000, limit: 4 });
        assert.equal(jobs.length, 4);
        await finish(store, jobs[0]!, { status: 'succeeded' }, t0 + 11_000);
        await finish(store, jobs[1]!, { status: 'succeeded' }, t0 + 11_000);
        await finish(store, jobs[2]!, { status: 'dead', reason: 'non_retryable_response', lastError: 'HTTP 400' }, t0 + 11_000);
        await finish(store, jobs[3]!, { status: 'pending', nextAttemptAtMs: t0 + 20_000, lastError: 'HTTP 500' }, t0 + 11_000);
        await check('completed', { events: 6, deliveries: { pending: 6, succeeded: 2, dead: 1 } });

        // A replay puts the dead letter back in line; a deleted destination's jobs become dead letters.
        assert.equal(await store.replay({ destinationId: 'd1' }, t0 + 12_000), 1);
        await check('replayed', { events: 6, deliveries: { pending: 7, succeeded: 2, dead: 0 } });
        assert.equal(await store.abandonPending('d2', t0 + 13_000), 3);
        await check('abandoned', { events: 6, deliveries: { pending: 4, succeeded: 2, dead: 3 } });

        // A loose job (a deletion notice) counts while pending; delivered, it is deleted.
        await store.enqueue([{ destinationId: 'd3', sourceId: 'app', kind: 'delete', userId: 'u1', body: '{"type":"delete"}' }], t0 + 14_000);
        await check('notice queued', { events: 6, deliveries: { pending: 5, succeeded: 2, dead: 3 } });
        const [notice] = await store.claim({ destinationId: 'd3', owner: 'w', nowMs: t0 + 15_000, leaseMs: 60_000, limit: 1 });
        await finish(store, notice!, { status: 'succeeded' }, t0 + 15_000);
        await check('notice delivered', { events: 6, deliveries: { pending: 4, succeeded: 2, dead: 3 } });

        // Retention: dead letters and delivered jobs (all but each table's newest row, which
        // pruning keeps), then events with no pending delivery.
        await pruneAll(store, 'deadLetters', t0 + 100_000);
        await pruneAll(store, 'delivered', t0 + 100_000);
        const pruned = await store.stats();
        assert.ok(pruned.deliveries.dead < 3 && pruned.deliveries.succeeded < 2, 'retention pruned dead letters and delivered jobs');
        await check('deliveries pruned', { events: 6, deliveries: pruned.deliveries });
        const d1 = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 30_000, leaseMs: 60_000, limit: 10 });
        for (const job of d1) await finish(store, job, { status: 'succeeded' }, t0 + 31_000);
        await pruneAll(store, 'events', t0 + 100_000);
        const eventsPruned = await store.stats();
        assert.ok(eventsPruned.events < 6, 'retention pruned events');
        await check('events pruned', { events: eventsPruned.events, deliveries: eventsPruned.deliveries });

        // A deletion request purges a user's events and deliveries.
        await store.ingest({ receivedAtMs: t0 + 40_000, events: [10, 11, 12].map((i) => event(i, ['d1'], 'u9')), rejections: [] });
        const before = await store.stats();
        await store.createRegulation({ id: 'reg_1', userIds: ['u9'], sourceIds: null, nowMs: t0 + 41_000 });
        const done = await store.executeRegulation({ id: 'reg_1', noticesFor: () => [], nowMs: t0 + 42_000 });
        assert.equal(done.eventsDeleted, 3);
        await check('purged', {
          events: before.events - 3,
          deliveries: { ...before.deliveries, pending: before.deliveries.pending - 3 },
        });

        // One delivered job sent again: one fewer succeeded, one more pending; delivered again, back.
        await store.ingest({ receivedAtMs: t0 + 50_000, events: [event(20, ['d1'], 'u8')], rejections: [] });
        const [sent] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 50_000, leaseMs: 60_000, limit: 10 });
        await finish(store, sent!, { status: 'succeeded' }, t0 + 50_000);
        const delivered = await store.stats();
        assert.equal(await store.replayDelivery({ id: sent!.id, destinationIdsIn: ['d1'] }, t0 + 51_000), 'replayed');
        await check('one delivery replayed', {
          events: delivered.events,
          deliveries: { ...delivered.deliveries, pending: delivered.deliveries.pending + 1, succeeded: delivered.deliveries.succeeded - 1 },
        });
        const [again] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 52_000, leaseMs: 60_000, limit: 10 });
        assert.equal(again?.id, sent!.id);
        await finish(store, again!, { status: 'succeeded' }, t0 + 52_000);
        await check('replayed delivery delivered', { events: delivered.events, deliveries: delivered.deliveries });

        // A dead letter sent again by itself: one fewer dead, one more pending.
        await store.ingest({ receivedAtMs: t0 + 53_000, events: [event(21, ['d1'], 'u9')], rejections: [] });
        const [failing] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 53_000, leaseMs: 60_000, limit: 10 });
        await finish(store, failing!, { status: 'dead', reason: 'non_retryable_response', lastError: 'HTTP 400' }, t0 + 53_000);
        const withDead = await store.stats();
        assert.equal(await store.replayDelivery({ id: failing!.id, destinationIdsIn: ['d1'] }, t0 + 54_000), 'replayed');
        await check('one dead letter replayed', {
          events: withDead.events,
          deliveries: { ...withDead.deliveries, pending: withDead.deliveries.pending + 1, dead: withDead.deliveries.dead - 1 },
        });

        // After a restart the totals are what the rows say.
        if (opened.reopen) {
          const kept = await store.stats();
          await store.close();
          store = opened.reopen();
          assert.deepEqual(await store.stats(), kept);
        }
      } finally {
        await store.close();
        await opened.cleanup();
      }
      assert.equal(steps.length, 13, 'every step was checked');
    });
  });

describe('store totals: SQLite totals roll back with their writes', () => {
  test('ST02 a write that fails counts nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-totals-'));
    const store = new SqliteStore({ path: join(dir, 'ferry.db') });
    try {
      await store.ingest({ receivedAtMs: t0, events: [event(0, ['d1'])], rejections: [] });
      // An event SQLite refuses (no JSON) after a good one: the write fails as a whole.
      const bad = { ...event(1, ['d1']), json: undefined as unknown as string };
      await assert.rejects(store.ingest({ receivedAtMs: t0, events: [event(2, ['d1']), bad], rejections: [] }));
      assert.deepEqual(await store.stats(), { events: 1, deliveries: { pending: 1, succeeded: 0, dead: 0 }, rejections: 0 });
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Waits for a fold of the deltas that a write or read started in the background. */
const foldsSettled = (store: PgStore) => (store as unknown as { totals: { settled(): Promise<void> } }).totals.settled();

describe('store totals: PostgreSQL deltas', () => {
  test('ST03 each statement adds one delta row; writes fold them at most every 10 s, and a read folds many', async () => {
    const clock = new ManualClock(t0);
    const { store, cleanup, inSchema } = await openFreshPgStore(4, { clock });
    const deltas = () => inSchema(async (c) => (await c.query<{ n: number }>(`SELECT COUNT(*)::int AS n FROM store_total_deltas`)).rows[0]!.n);
    try {
      for (let i = 0; i < 5; i++) await store.ingest({ receivedAtMs: t0, events: [event(i, ['d1'])], rejections: [] });
      await foldsSettled(store);
      // Since the first write's fold: an events row per later write; new deliveries add none
      // (pending is the queue's count, kept by migration 14's deltas).
      // (The first write's row is folded or not, as its fold ran before or after it committed.)
      const since = await deltas();
      assert.ok(since >= 4 && since <= 6, `the fold and a row per later write, none for deliveries: ${since}`);
      // A retry moves no delivery between statuses: no row.
      const rows = await deltas();
      const [job] = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 1000, leaseMs: 60_000, limit: 1 });
      await finish(store, job!, { status: 'pending', nextAttemptAtMs: t0 + 5000, lastError: 'HTTP 500' }, t0 + 1000);
      assert.equal(await deltas(), rows);
      clock.advance(10_000);
      await store.ingest({ receivedAtMs: t0, events: [event(5, ['d1'])], rejections: [] });
      await foldsSettled(store);
      assert.ok((await deltas()) <= 2, 'folded: one row, and the write that asked for it');
      const expected = { events: 6, deliveries: { pending: 6, succeeded: 0, dead: 0 }, rejections: 0 };
      assert.deepEqual(await store.stats(), expected);

      // Many deltas (more than a read lets stand): the read answers their sum and folds them.
      await inSchema((c) => c.query(`INSERT INTO store_total_deltas (events) SELECT CASE WHEN i % 2 = 0 THEN 1 ELSE -1 END FROM generate_series(1, 1200) i`));
      assert.deepEqual(await store.stats(), expected);
      await foldsSettled(store);
      assert.equal(await deltas(), 1);
      assert.deepEqual(await store.stats(), expected);
    } finally {
      await store.close();
      await cleanup();
    }
  });
});
