import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { DAY_MS, defaultRetention, type RetentionSettings } from '../../src/model/retention.js';
import { RetentionPruner } from '../../src/retention/pruner.js';
import { loadRetention, saveRetention } from '../../src/retention/retention-settings.js';
import { PgRetention, vacuumThreshold } from '../../src/store/postgres/pg-retention.js';
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

test('the vacuum threshold is a fifth of the table, as autovacuum would use, and at least 1,000 deletions', () => {
  assert.equal(vacuumThreshold(0), 1_000);
  assert.equal(vacuumThreshold(4_000), 1_000);
  assert.equal(vacuumThreshold(30_000), 6_000);
  assert.equal(vacuumThreshold(10_000_000), 2_000_000);
});

test('on PostgreSQL a table is due for a vacuum once a fifth of it (at least 1,000 rows) was pruned; a table autovacuum does not visit, the pruner vacuums', async (t) => {
  const onCleanup = cleanups(t);
  const { url, schema } = await freshSchema(onCleanup);
  const store = await PgStore.open({ connectionString: url, schema, poolSize: 2 });
  onCleanup(() => store.close());
  const retention = store.retention;
  assert.ok(retention instanceof PgRetention);
  for (let i = 0; i < 12; i++)
    await store.ingest({ receivedAtMs: t0, events: Array.from({ length: 500 }, (_, j) => event(`v${i}-${j}`, t0, { deliveries: [] })), rejections: [] });
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  onCleanup(() => client.end());
  const estimate = async () =>
    Number((await client.query(`SELECT reltuples FROM pg_class WHERE relname = 'events' AND relnamespace = current_schema()::regnamespace`)).rows[0].reltuples);
  // Autovacuum off for this table, whatever the server's setting: the pruner's to vacuum, and
  // no autovacuum (nor its analyze) changes the estimate behind the test's back.
  await client.query(`ALTER TABLE events SET (autovacuum_enabled = off)`);
  // The row estimate the rule reads: 6,000 rows, so a fifth is 1,200.
  await client.query(`ANALYZE events`);
  assert.equal(await estimate(), 6_000);
  const prune = async (limit: number, afterId: number) => retention.pruneBatch({ kind: 'events', cutoffMs: t0 + 1, afterId, limit });

  // The decision does not depend on autovacuum: it is the rule's, on either setting.
  const first = await prune(1_100, 0);
  assert.equal(first.deleted, 1_100);
  assert.deepEqual(await retention.dueForVacuum(), [], 'past 1,000 deletions, short of a fifth of the table');
  assert.equal((await prune(100, first.lastId)).deleted, 100);
  assert.deepEqual(await retention.dueForVacuum(), ['events'], 'a fifth of the table');

  await retention.reclaimSpace();
  assert.deepEqual(await retention.dueForVacuum(), [], 'vacuumed: counted from zero again');
  assert.equal(await estimate(), 4_800, 'the pruner ran VACUUM, which set the estimate to the rows left');
});
