import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { DAY_MS, defaultRetention, type RetentionSettings } from '../../src/model/retention.js';
import { RetentionPruner } from '../../src/retention/pruner.js';
import { loadRetention, saveRetention } from '../../src/retention/retention-settings.js';
import { PgRetention, tablesToVacuum, vacuumThreshold, type TableVacuumState } from '../../src/store/postgres/pg-retention.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { NewEvent, PruneBatchRequest, Store } from '../../src/store/store.js';
import { ManualClock } from '../../src/util/clock.js';
import { capturedLogger } from '../helpers/captured-logger.js';
import { cleanups } from '../helpers/cleanups.js';
import { freshSchema, stopPostgres } from '../helpers/postgres.js';
import { inSqliteFile } from '../helpers/sqlite.js';

after(() => stopPostgres());

const t0 = Date.parse('2026-01-01T00:00:00.000Z');

/** Runs a query on a connection of the test's own (not the store's). */
type Query = (sql: string) => Promise<Record<string, unknown>[]>;

const backends: { name: string; open: (onCleanup: (fn: () => Promise<void>) => void) => Promise<{ store: Store; path?: string; query: Query }> }[] = [
  {
    name: 'sqlite',
    open: async (onCleanup) => {
      const dir = mkdtempSync(join(tmpdir(), 'ferry-retention-'));
      const path = join(dir, 'ferry.db');
      const store = new SqliteStore({ path });
      onCleanup(async () => {
        await store.close().catch(() => {});
        rmSync(dir, { recursive: true, force: true });
      });
      return { store, path, query: async (sql) => inSqliteFile(path, (db) => db.prepare(sql).all() as Record<string, unknown>[]) };
    },
  },
  {
    name: 'postgres',
    open: async (onCleanup) => {
      const { url, schema } = await freshSchema(onCleanup);
      const store = await PgStore.open({ connectionString: url, schema, poolSize: 2 });
      onCleanup(() => store.close());
      const query: Query = async (sql) => {
        const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
        await client.connect();
        try {
          return (await client.query(sql)).rows as Record<string, unknown>[];
        } finally {
          await client.end();
        }
      };
      return { store, query };
    },
  },
];

function event(messageId: string, receivedAtMs: number, over: Partial<NewEvent> = {}): NewEvent {
  return {
    sourceId: 'app',
    messageId,
    type: 'track',
    userId: 'u1',
    event: 'E',
    receivedAtMs,
    json: JSON.stringify({ messageId }),
    deliveries: [{ destinationId: 'd1', kind: 'event', body: `{"messageId":"${messageId}"}` }],
    ...over,
  };
}

const attempt = {
  url: 'https://example.com/hook',
  startedAtMs: t0,
  latencyMs: 5,
  statusCode: 503,
  errorClass: 'http' as const,
  errorMessage: 'HTTP 503',
  responseBody: null,
  trigger: 'scheduled' as const,
};

function audit(atMs: number) {
  return {
    atMs,
    tokenId: 'bootstrap',
    method: 'PATCH',
    path: '/admin/v1/x',
    action: 'x.update',
    object: null,
    status: 200,
    error: null,
    before: null,
    after: null,
  };
}

function pruner(store: Store, clock: ManualClock, over: Partial<ConstructorParameters<typeof RetentionPruner>[0]> = {}) {
  return new RetentionPruner({ store, clock, logger: capturedLogger().logger, ...over });
}

/** Ids of the deliveries of e1 (succeeded), e2 (dead), e3 (retrying), e4 (pending), all received at t0; and a young one. */
async function fill(store: Store): Promise<{ succeeded: number; dead: number; retrying: number; pending: number; young: number }> {
  await store.ingest({
    receivedAtMs: t0,
    events: ['e1', 'e2', 'e3', 'e4'].map((id) => event(id, t0)),
    rejections: [{ sourceId: 'app', index: 1, code: 'invalid_type', message: 'type is missing' }],
  });
  const claimed = await store.claim({ destinationId: 'd1', owner: 'w', nowMs: t0, leaseMs: 60_000, limit: 3 });
  assert.equal(claimed.length, 3);
  const [a, b, c] = claimed.sort((x, y) => x.id - y.id);
  await store.complete({
    id: a!.id,
    owner: 'w',
    nowMs: t0 + 1,
    firstAttemptAtMs: t0,
    attempts: [{ ...attempt, statusCode: 200, errorClass: null, errorMessage: null }],
    outcome: { status: 'succeeded' },
  });
  await store.complete({
    id: b!.id,
    owner: 'w',
    nowMs: t0 + 1,
    firstAttemptAtMs: t0,
    attempts: [attempt],
    outcome: { status: 'dead', reason: 'non_retryable_response', lastError: 'HTTP 404' },
  });
  await store.complete({
    id: c!.id,
    owner: 'w',
    nowMs: t0 + 1,
    firstAttemptAtMs: t0,
    attempts: [attempt],
    outcome: { status: 'pending', nextAttemptAtMs: t0 + 200 * DAY_MS, lastError: 'HTTP 503' },
  });
  await store.audit.append(audit(t0));
  // The newest row of each table is never pruned (SQLite would give its id again): these are young anyway.
  const late = t0 + 100 * DAY_MS;
  await store.ingest({
    receivedAtMs: late,
    events: [event('young', late)],
    rejections: [{ sourceId: 'app', index: 0, code: 'invalid_type', message: 'late' }],
  });
  await store.audit.append(audit(late));
  const all = await store.listDeliveries({ limit: 10 });
  const pending = all.find((d) => d.messageId === 'e4')!.id;
  const young = all.find((d) => d.messageId === 'young')!.id;
  return { succeeded: a!.id, dead: b!.id, retrying: c!.id, pending: Number(pending), young: Number(young) };
}

for (const backend of backends) {
  describe(`retention on ${backend.name}`, () => {
    test('defaults: delivered after 30 days, events and dead letters after 90, rejections after 30, audit kept', async (t) => {
      const { store, query } = await backend.open(cleanups(t));
      assert.deepEqual(await loadRetention(store), defaultRetention);
      const ids = await fill(store);
      const clock = new ManualClock(t0 + 60 * DAY_MS);
      const p = pruner(store, clock);

      // At 60 days: the delivered delivery goes, the dead letter and its event stay.
      let run = await p.runOnce();
      assert.equal(run.deleted.delivered, 1);
      assert.equal(run.deleted.deadLetters, 0);
      assert.equal(run.deleted.events, 0);
      assert.equal(run.deleted.rejections, 1);
      assert.equal(await store.getDelivery(ids.succeeded), null);
      assert.notEqual(await store.getDelivery(ids.dead), null);

      // At 100 days: the dead letter and the events no pending delivery needs go.
      clock.set(t0 + 100 * DAY_MS);
      run = await p.runOnce();
      assert.equal(run.deleted.deadLetters, 1);
      assert.equal(run.deleted.events, 2);
      assert.equal(run.deleted.auditLog, 0);
      assert.equal(await store.getDelivery(ids.dead), null);
      const retrying = await store.getDelivery(ids.retrying);
      assert.equal(retrying?.delivery.status, 'pending');
      assert.equal(retrying?.attempts.length, 1);
      // Their events are kept for them: the listing reads the receipt time from the event.
      assert.notEqual(retrying?.delivery.receivedAt, null);
      assert.equal((await store.getDelivery(ids.pending))?.delivery.status, 'pending');
      const remaining = await store.listDeliveries({ limit: 10 });
      assert.deepEqual(remaining.map((d) => d.messageId).sort(), ['e3', 'e4', 'young']);
      assert.equal((await store.audit.list({ limit: 10 })).length, 2);
      // The attempts of the deliveries pruned went with them; the retrying one's stay.
      const orphans = await query(`SELECT count(*) AS n FROM attempts WHERE delivery_id NOT IN (SELECT id FROM deliveries)`);
      assert.deepEqual(
        orphans.map((r) => Number(r['n'])),
        [0],
      );
      assert.deepEqual(
        (await query(`SELECT message_id FROM events ORDER BY id`)).map((r) => r['message_id']),
        ['e3', 'e4', 'young'],
      );
      assert.equal(p.deletedTotal.delivered, 1);
      assert.equal(p.lastRun?.atMs, t0 + 100 * DAY_MS);
    });

    test('the retention stored applies, 0 keeps forever, fractions of a day work', async (t) => {
      const { store } = await backend.open(cleanups(t));
      const settings: RetentionSettings = { events: 0, delivered: 0, deadLetters: 0, rejections: 0, auditLog: 0 };
      await saveRetention(store, settings);
      await fill(store);
      const clock = new ManualClock(t0 + 1000 * DAY_MS);
      const p = pruner(store, clock);
      const kept = await p.runOnce();
      assert.deepEqual(kept.deleted, { events: 0, delivered: 0, deadLetters: 0, rejections: 0, auditLog: 0 });
      assert.equal(kept.batches, 0);

      // One minute of audit log: the old entry goes.
      await saveRetention(store, { ...settings, auditLog: 1 / 1440 });
      const run = await p.runOnce();
      assert.equal(run.deleted.auditLog, 1);
      assert.deepEqual(
        (await store.audit.list({ limit: 10 })).map((e) => e.atMs),
        [t0 + 100 * DAY_MS],
      );
    });

    test('batches stay within their bound and a run goes on until nothing is old enough', async (t) => {
      const { store } = await backend.open(cleanups(t));
      await saveRetention(store, { ...defaultRetention, events: 1 });
      for (let i = 0; i < 4; i++)
        await store.ingest({ receivedAtMs: t0, events: Array.from({ length: 10 }, (_, j) => event(`m${i}-${j}`, t0, { deliveries: [] })), rejections: [] });
      await store.ingest({ receivedAtMs: t0 + 5 * DAY_MS, events: [event('young', t0 + 5 * DAY_MS, { deliveries: [] })], rejections: [] });
      const limits: number[] = [];
      const recorded: Store = Object.create(store, {
        retention: {
          value: {
            ...store.retention,
            pruneBatch: (r: PruneBatchRequest) => {
              if (r.kind === 'events') limits.push(r.limit);
              return store.retention.pruneBatch(r);
            },
            reclaimSpace: (n: number) => store.retention.reclaimSpace(n),
          },
        },
      });
      const run = await pruner(recorded, new ManualClock(t0 + 3 * DAY_MS), { minBatchRows: 3, maxBatchRows: 7 }).runOnce();
      assert.equal(run.deleted.events, 40);
      assert.ok(limits.length >= 6, `${limits.length} batches`);
      assert.ok(
        limits.every((l) => l <= 7 && l >= 3),
        limits.join(','),
      );
    });

    test('metrics inputs: size and row estimates', async (t) => {
      const { store } = await backend.open(cleanups(t));
      await fill(store);
      assert.ok((await store.retention.sizeBytes()) > 0);
      const rows = await store.retention.rowEstimates();
      assert.deepEqual(Object.keys(rows).sort(), ['attempts', 'audit_log', 'deliveries', 'events', 'rejections']);
      if (backend.name === 'sqlite') assert.equal(rows.events, 5);
    });
  });
}

test('SQLite gives the space of pruned rows back to the file system', async (t) => {
  const { store, path } = await backends[0]!.open(cleanups(t));
  const big = 'x'.repeat(2000);
  for (let i = 0; i < 20; i++)
    await store.ingest({
      receivedAtMs: t0,
      events: Array.from({ length: 100 }, (_, j) => event(`m${i}-${j}`, t0, { json: JSON.stringify({ big, i, j }), deliveries: [] })),
      rejections: [],
    });
  const before = await store.retention.sizeBytes();
  assert.ok(before > 4_000_000, `${before}`);
  const run = await pruner(store, new ManualClock(t0 + 100 * DAY_MS)).runOnce();
  assert.equal(run.deleted.events, 1999);
  const afterPrune = await store.retention.sizeBytes();
  assert.ok(afterPrune < before / 10, `${afterPrune} of ${before}`);
  await store.close();
  assert.ok(statSync(path!).size < before / 10, `${statSync(path!).size} of ${before}`);
});

test('two PostgreSQL nodes pruning at once delete each row once', async (t) => {
  const onCleanup = cleanups(t);
  const { url, schema } = await freshSchema(onCleanup);
  const a = await PgStore.open({ connectionString: url, schema, poolSize: 2 });
  onCleanup(() => a.close());
  const b = await PgStore.open({ connectionString: url, schema, poolSize: 2 });
  onCleanup(() => b.close());
  await saveRetention(a, { ...defaultRetention, events: 1 });
  for (let i = 0; i < 10; i++)
    await a.ingest({ receivedAtMs: t0, events: Array.from({ length: 50 }, (_, j) => event(`m${i}-${j}`, t0, { deliveries: [] })), rejections: [] });
  const clock = new ManualClock(t0 + 10 * DAY_MS);
  const options = { minBatchRows: 5, maxBatchRows: 20 };
  const [ra, rb] = await Promise.all([pruner(a, clock, options).runOnce(), pruner(b, clock, options).runOnce()]);
  assert.equal(ra.deleted.events + rb.deleted.events, 499);
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    assert.deepEqual((await client.query(`SELECT message_id FROM events`)).rows, [{ message_id: 'm9-49' }]);
  } finally {
    await client.end();
  }
});

test("the vacuum threshold is a tenth of the table, half of autovacuum's default, and at least 1,000 dead rows", () => {
  assert.equal(vacuumThreshold(0), 1_000);
  assert.equal(vacuumThreshold(4_000), 1_000);
  assert.equal(vacuumThreshold(30_000), 3_000);
  assert.equal(vacuumThreshold(10_000_000), 1_000_000);
});

test('the pruner vacuums a table autovacuum does not cover once its dead rows grew by the threshold since its last vacuum', () => {
  const none = new Map<string, number>();
  const table = (over: Partial<TableVacuumState> = {}): TableVacuumState => ({ table: 'events', rows: 30_000, deadRows: 0, autovacuum: false, ...over });
  assert.deepEqual(tablesToVacuum([table({ deadRows: 2_999 })], none, none), [], 'short of a tenth');
  assert.deepEqual(tablesToVacuum([table({ deadRows: 3_000 })], none, none), ['events'], 'a tenth of the table');
  assert.deepEqual(tablesToVacuum([table({ deadRows: 30_000, autovacuum: true })], none, new Map([['events', 30_000]])), [], 'autovacuum covers it');
  // Not pruned, but emptied as jobs are delivered: its dead rows count the same.
  const queue = table({ table: 'delivery_queue', rows: 200 });
  assert.deepEqual(tablesToVacuum([{ ...queue, deadRows: 999 }], none, none), [], 'a small table: short of 1,000');
  assert.deepEqual(tablesToVacuum([{ ...queue, deadRows: 1_000 }], none, none), ['delivery_queue']);
  // Rows the last vacuum could not remove (an open transaction may still see them) are counted from.
  const kept = new Map([['events', 4_000]]);
  assert.deepEqual(tablesToVacuum([table({ deadRows: 6_999 })], kept, none), [], 'what the last vacuum kept plus less than a tenth');
  assert.deepEqual(tablesToVacuum([table({ deadRows: 7_000 })], kept, none), ['events']);
  // The statistics reach other sessions up to a second late, or never with track_counts off.
  assert.deepEqual(tablesToVacuum([table({ deadRows: 0 })], none, new Map([['events', 3_000]])), ['events'], "the pruner's own count stands in");
  assert.deepEqual(
    tablesToVacuum([table({ deadRows: 3_000 }), queue, table({ table: 'attempts', deadRows: 3_000, autovacuum: true })], none, none),
    ['events'],
    'each table on its own',
  );
});

/** A connection of the test's own to the store's schema. */
async function schemaClient(url: string, schema: string, onCleanup: (fn: () => Promise<void>) => void): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  onCleanup(() => client.end());
  return client;
}

/** A table's dead rows by PostgreSQL's statistics. */
async function deadRows(client: pg.Client, table: string): Promise<number> {
  const { rows } = await client.query(`SELECT n_dead_tup FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = $1`, [table]);
  return Number(rows[0]?.n_dead_tup ?? 0);
}

/** How many times a table was vacuumed by hand (by the pruner), by PostgreSQL's statistics. */
async function vacuums(client: pg.Client, table: string): Promise<number> {
  const { rows } = await client.query(`SELECT vacuum_count FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = $1`, [table]);
  return Number(rows[0]?.vacuum_count ?? 0);
}

/** Bounded wait until the statistics count `n` dead rows (a session that ended reports them a moment later). */
async function statisticsShow(client: pg.Client, table: string, n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await deadRows(client, table)) < n) {
    if (Date.now() > deadline) throw new Error(`the statistics did not show ${n} dead rows in ${table} within 10 s (${await deadRows(client, table)})`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('on PostgreSQL a pruned table is vacuumed by the pruner once a tenth of it (at least 1,000 rows) was deleted, where autovacuum is off for it', async (t) => {
  const onCleanup = cleanups(t);
  const { url, schema } = await freshSchema(onCleanup);
  const store = await PgStore.open({ connectionString: url, schema, poolSize: 2 });
  onCleanup(() => store.close());
  const retention = store.retention;
  assert.ok(retention instanceof PgRetention);
  const client = await schemaClient(url, schema, onCleanup);
  // Off for this table whatever the server's setting, as an operator may set it.
  await client.query(`ALTER TABLE events SET (autovacuum_enabled = off)`);
  for (let i = 0; i < 24; i++)
    await store.ingest({ receivedAtMs: t0, events: Array.from({ length: 500 }, (_, j) => event(`v${i}-${j}`, t0, { deliveries: [] })), rejections: [] });
  const estimate = async () =>
    Number((await client.query(`SELECT reltuples FROM pg_class WHERE relname = 'events' AND relnamespace = current_schema()::regnamespace`)).rows[0].reltuples);
  // The row estimate the rule reads: 12,000 rows, so a tenth is 1,200.
  await client.query(`ANALYZE events`);
  assert.equal(await estimate(), 12_000);
  const prune = async (limit: number, afterId: number) => retention.pruneBatch({ kind: 'events', cutoffMs: t0 + 1, afterId, limit });

  const first = await prune(1_100, 0);
  assert.equal(first.deleted, 1_100);
  assert.ok(!(await retention.dueForVacuum()).includes('events'), 'past 1,000 deletions, short of a tenth of the table');
  assert.equal((await prune(100, first.lastId)).deleted, 100);
  assert.ok((await retention.dueForVacuum()).includes('events'), 'a tenth of the table');

  await retention.reclaimSpace();
  // VACUUM set the estimate to the rows left.
  assert.equal(await estimate(), 10_800);
  assert.ok(!(await retention.dueForVacuum()).includes('events'), 'vacuumed: counted from zero again');
});

test('on PostgreSQL the delivery queue, emptied by deliveries rather than pruned, is vacuumed too; rows an open transaction still sees do not call for a vacuum at every run', async (t) => {
  const onCleanup = cleanups(t);
  const { url, schema } = await freshSchema(onCleanup);
  const store = await PgStore.open({ connectionString: url, schema, poolSize: 2 });
  onCleanup(() => store.close());
  const retention = store.retention;
  const client = await schemaClient(url, schema, onCleanup);
  await client.query(`ALTER TABLE delivery_queue SET (autovacuum_enabled = off)`);
  const autovacuumOn = (await client.query(`SHOW autovacuum`)).rows[0].autovacuum === 'on';
  // Jobs queued, then every one taken out of the queue at once (their destination deleted), by
  // a node of its own: a session reports its statistics when it ends, and while it lives up to
  // 10 s after a transaction, which the pruner's rule (run every minute) need not wait for here.
  const queueAndAbandon = async (prefix: string, nowMs: number) => {
    const node = await PgStore.open({ connectionString: url, schema, poolSize: 1 });
    try {
      for (let i = 0; i < 6; i++)
        await node.ingest({ receivedAtMs: t0, events: Array.from({ length: 200 }, (_, j) => event(`${prefix}${i}-${j}`, t0)), rejections: [] });
      assert.deepEqual(await retention.dueForVacuum(), [], '1,200 jobs queued, none dead');
      assert.equal(await node.abandonPending('d1', nowMs), 1_200);
    } finally {
      await node.close();
    }
    await statisticsShow(client, 'delivery_queue', 1_200);
  };

  await queueAndAbandon('a', t0 + 1);
  const due = await retention.dueForVacuum();
  assert.ok(due.includes('delivery_queue'), `nothing pruned, yet the queue is due: ${due.join(', ')}`);
  // The jobs' deliveries were updated (dead-lettered): their old versions are left to autovacuum where it is on.
  if (autovacuumOn) assert.deepEqual(due, ['delivery_queue']);
  await retention.reclaimSpace();
  assert.equal(await vacuums(client, 'delivery_queue'), 1, 'vacuumed');
  assert.ok(!(await retention.dueForVacuum()).includes('delivery_queue'), 'vacuumed: counted from there');

  // An open transaction's snapshot keeps the next dead rows from being removed.
  const reader = await schemaClient(url, schema, onCleanup);
  await reader.query(`BEGIN ISOLATION LEVEL REPEATABLE READ`);
  await reader.query(`SELECT count(*) FROM delivery_queue`);
  await queueAndAbandon('b', t0 + 2);
  assert.ok((await retention.dueForVacuum()).includes('delivery_queue'));
  await retention.reclaimSpace();
  assert.equal(await vacuums(client, 'delivery_queue'), 2);
  // (At least: a transaction of another session of the database may hold rows back too.)
  assert.ok((await deadRows(client, 'delivery_queue')) >= 1_200, 'the vacuum could remove none of them');
  assert.ok(!(await retention.dueForVacuum()).includes('delivery_queue'), 'what the vacuum kept is not due again');
  await reader.query(`COMMIT`);
});
