import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { LeaseTable } from '../../src/store/sqlite/lease-table.js';
import { openConnection } from '../../src/store/sqlite/sqlite-connection.js';
import { SqliteDeliveryRows } from '../../src/store/sqlite/sqlite-delivery-rows.js';
import type { PgStore } from '../../src/store/postgres/pg-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { AttemptOutcome, AttemptRecord } from '../../src/model/attempt.js';
import type { ClaimedDelivery, DestinationBacklog, NewEvent, Store } from '../../src/store/store.js';
import { ManualClock } from '../../src/util/clock.js';
import { openFreshPgStore, stopPostgres } from '../helpers/postgres.js';

after(() => stopPostgres());

const t0 = Date.parse('2026-06-01T00:00:00.000Z');

function event(i: number, destinations: string[]): NewEvent {
  const messageId = `m${i}`;
  return {
    sourceId: 'app',
    messageId,
    type: 'track',
    userId: 'u1',
    event: 'E',
    // Each a second later: the oldest pending job is told apart by its creation time.
    receivedAtMs: t0 + i * 1000,
    json: JSON.stringify({ messageId }),
    deliveries: destinations.map((destinationId) => ({ destinationId, kind: 'event' as const, body: `{"messageId":"${messageId}"}` })),
  };
}

const exchange = (statusCode: number): AttemptRecord => ({
  url: 'http://127.0.0.1:9/hook',
  startedAtMs: t0,
  latencyMs: 3,
  statusCode,
  errorClass: statusCode < 300 ? null : 'http',
  errorMessage: statusCode < 300 ? null : `HTTP ${statusCode}`,
  responseBody: null,
  trigger: 'scheduled',
});

async function finish(store: Store, job: ClaimedDelivery, outcome: AttemptOutcome, nowMs: number): Promise<void> {
  const kept = await store.complete({
    id: job.id,
    owner: 'w',
    createdAtMs: job.createdAtMs,
    kind: job.kind,
    nowMs,
    firstAttemptAtMs: nowMs,
    attempts: [exchange(outcome.status === 'succeeded' ? 200 : 500)],
    outcome,
  });
  assert.ok(kept);
}

/** The backlog as `{ destination: [pending, dead, oldest pending's creation as seconds after t0] }`. */
function view(rows: DestinationBacklog[]): Record<string, [number, number, number | null]> {
  return Object.fromEntries(
    rows.map((r) => [r.destinationId, [r.pending, r.dead, r.oldestPendingCreatedAtMs === null ? null : (r.oldestPendingCreatedAtMs - t0) / 1000]]),
  );
}

const backends: { name: string; open: () => Promise<{ store: Store; reopen?: () => Store; cleanup: () => Promise<void> }> }[] = [
  {
    name: 'sqlite',
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'ferry-backlog-'));
      const path = join(dir, 'ferry.db');
      return { store: new SqliteStore({ path }), reopen: () => new SqliteStore({ path }), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  { name: 'postgres', open: () => openFreshPgStore(4) },
];

for (const backend of backends)
  describe(`backlog per destination: ${backend.name}`, () => {
    test('BC01 pending, dead letters and the oldest pending job follow every write that changes them', async () => {
      const opened = await backend.open();
      let store = opened.store;
      try {
        const backlog = async () => view(await store.backlog());
        assert.deepEqual(await backlog(), {});

        // Ingestion: five jobs for d1, three of them for d2 too; a duplicate adds nothing.
        await store.ingest({ receivedAtMs: t0, events: [0, 1, 2, 3, 4].map((i) => event(i, i < 3 ? ['d1', 'd2'] : ['d1'])), rejections: [] });
        await store.ingest({ receivedAtMs: t0, events: [event(0, ['d1', 'd2'])], rejections: [] });
        assert.deepEqual(await backlog(), { d1: [5, 0, 0], d2: [3, 0, 0] });

        // Outcomes: the first delivered, the second dead-lettered, the third to be retried.
        const jobs = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0 + 10_000, leaseMs: 60_000, limit: 3 });
        assert.deepEqual(
          jobs.map((j) => (j.createdAtMs - t0) / 1000),
          [0, 1, 2],
        );
        await finish(store, jobs[0]!, { status: 'succeeded' }, t0 + 11_000);
        await finish(store, jobs[1]!, { status: 'dead', reason: 'non_retryable_response', lastError: 'HTTP 500' }, t0 + 11_000);
        await finish(store, jobs[2]!, { status: 'pending', nextAttemptAtMs: t0 + 20_000, lastError: 'HTTP 500' }, t0 + 11_000);
        assert.deepEqual(await backlog(), { d1: [3, 1, 2], d2: [3, 0, 0] }, 'the oldest pending is the retried one now');

        // A replay puts the dead letter back in line with its old id: it is the oldest again.
        assert.equal(await store.replay({ destinationId: 'd1' }, t0 + 12_000), 1);
        assert.deepEqual(await backlog(), { d1: [4, 0, 1], d2: [3, 0, 0] });

        // A loose job (a deletion notice) is pending too.
        await store.enqueue([{ destinationId: 'd3', sourceId: 'app', kind: 'delete', userId: 'u1', body: '{"type":"delete"}' }], t0 + 13_000);
        assert.deepEqual(await backlog(), { d1: [4, 0, 1], d2: [3, 0, 0], d3: [1, 0, 13] });

        // A delivered notice is deleted: nothing of it is left to count.
        const [notice] = await store.claim({ destinationId: 'd3', owner: 'w', nowMs: t0 + 14_000, leaseMs: 60_000, limit: 1 });
        await finish(store, notice!, { status: 'succeeded' }, t0 + 14_000);
        assert.deepEqual(await backlog(), { d1: [4, 0, 1], d2: [3, 0, 0] });

        // A deleted destination's pending jobs become dead letters.
        assert.equal(await store.abandonPending('d2', t0 + 15_000), 3);
        assert.deepEqual(await backlog(), { d1: [4, 0, 1], d2: [0, 3, null] });

        // Retention prunes dead letters (all but the newest row of the table, which it keeps).
        let afterId = 0;
        for (;;) {
          const r = await store.retention.pruneBatch({ kind: 'deadLetters', cutoffMs: t0 + 100_000, afterId, limit: 100 });
          afterId = r.lastId;
          if (r.done) break;
        }
        // The three dead letters are pruned (none of them is the table's newest row).
        assert.deepEqual(await backlog(), { d1: [4, 0, 1] });

        // After a restart the counts are what the rows say.
        if (opened.reopen) {
          await store.close();
          store = opened.reopen();
          assert.deepEqual(await backlog(), { d1: [4, 0, 1] });
        }
      } finally {
        await store.close();
        await opened.cleanup();
      }
    });
  });

describe('backlog per destination: SQLite counts roll back with their writes', () => {
  test('BC02 rows inserted in a savepoint that is rolled back are not counted; a batch counts once per destination', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-backlog-'));
    const db = openConnection(join(dir, 'ferry.db'));
    try {
      const rows = new SqliteDeliveryRows(db, new LeaseTable());
      const insert = (d: string) => rows.insert(d, 'app', null, 'event', null, null, '{}', t0, t0);
      db.transaction(() => rows.batch(() => ['d1', 'd1', 'd2'].forEach(insert)))();
      assert.deepEqual(rows.counts.rows(), [
        { destinationId: 'd1', pending: 2, dead: 0 },
        { destinationId: 'd2', pending: 1, dead: 0 },
      ]);
      const failing = db.transaction(() =>
        rows.batch(() => {
          insert('d1');
          throw new Error('the write fails half-way');
        }),
      );
      assert.throws(failing, /half-way/);
      // Outside a batch a row is counted at once, and rolled back with its transaction.
      assert.throws(
        db.transaction(() => {
          insert('d2');
          throw new Error('rolled back');
        }),
        /rolled back/,
      );
      assert.deepEqual(rows.counts.rows(), [
        { destinationId: 'd1', pending: 2, dead: 0 },
        { destinationId: 'd2', pending: 1, dead: 0 },
      ]);
      assert.equal((db.prepare(`SELECT COUNT(*) AS n FROM deliveries`).get() as { n: number }).n, 3, 'the rows counted are the rows kept');
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Waits for a fold of the deltas that a write or read started in the background. */
const foldsSettled = (store: PgStore) => (store as unknown as { backlogReads: { settled(): Promise<void> } }).backlogReads.settled();

describe('backlog per destination: PostgreSQL deltas', () => {
  test('BC03 each statement adds a delta per destination; writes fold them into one per destination at most every 10 s, and a read folds many', async () => {
    const clock = new ManualClock(t0);
    const { store, cleanup, inSchema } = await openFreshPgStore(4, { clock });
    const deltas = () => inSchema(async (c) => (await c.query<{ n: number }>(`SELECT COUNT(*)::int AS n FROM backlog_deltas`)).rows[0]!.n);
    try {
      // The first write folds (nothing yet); the four after it, within 10 s, do not.
      for (let i = 0; i < 5; i++) await store.ingest({ receivedAtMs: t0, events: [event(i, i % 2 ? ['d1'] : ['d1', 'd2'])], rejections: [] });
      await foldsSettled(store);
      assert.ok((await deltas()) >= 7, 'a row per destination per statement since the first fold');
      clock.advance(10_000);
      await store.ingest({ receivedAtMs: t0, events: [event(5, ['d2'])], rejections: [] });
      await foldsSettled(store);
      assert.ok((await deltas()) <= 3, 'folded: one row per destination, and the write that asked for it');
      assert.deepEqual(view(await store.backlog()), { d1: [5, 0, 0], d2: [4, 0, 0] });

      // Many deltas (more than a read lets stand): the read answers their sum and folds them.
      await inSchema((c) =>
        c.query(`INSERT INTO backlog_deltas (destination_id, pending) SELECT 'd1', CASE WHEN i % 2 = 0 THEN 1 ELSE -1 END FROM generate_series(1, 1200) i`),
      );
      assert.deepEqual(view(await store.backlog()), { d1: [5, 0, 0], d2: [4, 0, 0] });
      await foldsSettled(store);
      assert.equal(await deltas(), 2);
      assert.deepEqual(view(await store.backlog()), { d1: [5, 0, 0], d2: [4, 0, 0] });
    } finally {
      await store.close();
      await cleanup();
    }
  });
});
