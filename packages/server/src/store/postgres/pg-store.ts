import pg from 'pg';
import type { DestinationConfig, SourceConfig } from '../../config/model.js';
import {
  keptRejections,
  claimColumns,
  toClaimed,
  toDeliveryView,
  toRegulation,
  iso,
  storedText,
  type AttemptRow,
  type ClaimTuple,
  type DeliveryRow,
  type RegulationRow,
} from '../rows.js';
import type {
  AffectedSources,
  AttemptView,
  ClaimedDelivery,
  Completion,
  DeleteNotice,
  DeliveryFilter,
  DeliveryView,
  HeldLease,
  IngestOutcome,
  IngestWrite,
  NewDelivery,
  Regulation,
  ReplayFilter,
  Store,
  StoreStats,
} from '../store.js';
import { defaultPurgeBatchSize, LinkedIdentities, type RegulationPlan } from '../../regulations/regulation-plan.js';
import { Batcher, ItemFailure } from '../../util/batcher.js';
import { attemptLog, toLogEntry } from './attempt-log.js';
import { migrations } from './migrations/index.js';

/** Options of the PostgreSQL store. */
export interface PgStoreOptions {
  /** A `postgres://` connection string. */
  connectionString: string;
  /** Schema holding Ferry's tables (created if missing); default `public`. Tests use one per test. */
  schema?: string;
  /** Connections in the pool; default 10. */
  poolSize?: number;
}

// BIGINT columns hold ms timestamps and ids, all far below 2^53: read them as numbers.
const typeParsers = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

const schemaName = /^[a-z_][a-z0-9_]*$/;

/**
 * When the next job of any of the destinations $1 is due: one seek in the due index per
 * destination. (MIN over `destination_id = ANY($1)` read every entry of every destination
 * named, the whole backlog, dead entries included.) Exported for the test of its plan.
 */
export const nextDueSql = `SELECT MIN(first.due) AS due FROM unnest($1::text[]) AS d(id)
  CROSS JOIN LATERAL (
    SELECT next_attempt_at AS due FROM delivery_queue WHERE destination_id = d.id ORDER BY next_attempt_at LIMIT 1
  ) AS first`;

/**
 * Records the outcomes of many jobs in one statement: $1 the jobs, a JSON array (JSON.stringify
 * is native; pg builds and escapes array literals element by element in JavaScript, on the
 * thread that also sends the webhooks), each with its attempt log (`a`, one entry per URL). A
 * job counts only if its queue row is still leased to the owner named: a job done leaves the
 * queue, a job to be retried stays in it, due again and unleased. Only then is the delivery
 * row written (from the rows those two return: joining them back to $1 was a loop over every
 * pair), and since no index of `deliveries` holds a column that changes here, that is a HOT
 * update (see migration 4).
 *
 * The first attempt a delivery records is kept in that row (`first_attempt_log`, the JSON of
 * `a` as sent), so the common delivery, done at its first attempt, adds no row to `attempts`
 * (migration 5). Whether the row already held one is read from the row as this statement
 * found it: only the lease holder writes a pending delivery's row, and it holds the lease.
 * Later attempts go to `attempts`. So does the log of a job whose lease was lost, if its
 * delivery exists: checked under a key-share lock, since this statement's snapshot may
 * predate a deletion request that purged it meanwhile; the lock waits for that purge and
 * then finds no row, and a purge that comes later deletes its attempts after its deliveries,
 * so after this commits. It answers with the jobs not kept, so that the usual answer is no
 * row at all. Runs on connections with {@link completionPlanner}. Exported for the test of
 * its plan.
 */
export const completeSql = `WITH x AS (
    SELECT * FROM json_to_recordset($1::json) AS x(i bigint, o text, f bigint, s text, n bigint, c bigint, r text, e text, a json)
  ), kept AS (
    DELETE FROM delivery_queue q USING x WHERE q.delivery_id = x.i AND q.lease_owner = x.o AND x.s <> 'pending'
    RETURNING x.*
  ), retried AS (
    UPDATE delivery_queue q SET next_attempt_at = x.n, lease_owner = NULL
    FROM x WHERE q.delivery_id = x.i AND q.lease_owner = x.o AND x.s = 'pending'
    RETURNING x.*
  ), updated AS (
    UPDATE deliveries d SET status = k.s, attempt_count = d.attempt_count + 1, first_attempt_at = k.f,
      next_attempt_at = COALESCE(k.n, d.next_attempt_at), completed_at = k.c, dead_reason = k.r,
      last_error = k.e, trigger = 'scheduled', first_attempt_log = COALESCE(d.first_attempt_log, k.a::text)
    FROM (SELECT * FROM kept UNION ALL SELECT * FROM retried) AS k JOIN deliveries found ON found.id = k.i
    WHERE d.id = k.i
    RETURNING d.id, found.first_attempt_log IS NULL AS inline
  ), logged AS (
    INSERT INTO attempts (delivery_id, url, started_at, latency_ms, status_code, error_class, error_message, response_body, trigger)
    SELECT x.i, a.u, a.s, a.l, a.c, a.e, a.m, a.r, a.t
    FROM x CROSS JOIN LATERAL ROWS FROM (json_to_recordset(x.a) AS (u text, s bigint, l int, c int, e text, m text, r text, t text))
      WITH ORDINALITY AS a(u, s, l, c, e, m, r, t, n)
    WHERE x.i IN (SELECT id FROM updated WHERE NOT inline)
      OR (x.i NOT IN (SELECT id FROM updated) AND EXISTS (SELECT 1 FROM deliveries WHERE id = x.i FOR KEY SHARE))
    ORDER BY x.i, a.n
  )
  SELECT x.i AS id FROM x WHERE x.i NOT IN (SELECT id FROM updated)`;

/**
 * Planner settings of the connections that run {@link completeSql}, and nothing else. Each job
 * of a completion must be found by primary key, one lookup per job. Planned once for any
 * values (a named statement), it expects 100 jobs, and a hash join over the whole table can
 * then look cheaper; with statistics that say few jobs are pending (taken while the queue was
 * empty, or none yet after a bulk load), reading every pending job did, and cost 15-30 ms per
 * statement in a backlog of 40,000. A scan or join method turned off is only priced out,
 * never refused, so a plan always exists.
 */
export const completionPlanner = '-c enable_seqscan=off -c enable_bitmapscan=off -c enable_hashjoin=off -c enable_mergejoin=off';

/**
 * Planner settings of the connections that run {@link claimSql}, and nothing else. The claim
 * must read the due index in its own order and stop after the jobs it takes. The queue's rows
 * are narrow, so reading every due job of the destination through a bitmap and sorting them
 * can look cheaper to the planner, with or without statistics; it is not, with a backlog of a
 * million. Sorts, bitmap scans and table scans are priced out, never refused.
 */
export const claimPlanner = '-c enable_seqscan=off -c enable_bitmapscan=off -c enable_sort=off';

/**
 * Least time between two completion statements. An outcome waits about this long to be
 * recorded (longer while the previous statement runs), its job still leased, while the next
 * webhook is already on its way.
 */
const completionIntervalMs = 10;

/**
 * The claim: $1 owner, $2 lease end, $3 destination, $4 now, $5 limit. It leases queue rows
 * read from the due index in its own order, taken again by primary key so that it touches
 * only those however large the backlog (`IN (subquery)` may be planned as a join that reads
 * the whole table). The delivery rows are read afterwards by {@link claimedSql}, in a
 * statement of their own: in this one they would be read as of its start, and a queue row
 * it leases may have been rescheduled by a completion that committed after that, which
 * would hand the worker the delivery as it was before that attempt. It answers with one row,
 * the ids leased as an array literal (NULL for none), which goes back to the server as it
 * came: a row per job to parse, and an array to build from them, cost this process more
 * than the rest of the claim. Exported for the test of its plan.
 */
export const claimSql = `WITH leased AS (
    UPDATE delivery_queue SET lease_owner = $1, next_attempt_at = $2
    WHERE delivery_id = ANY(ARRAY(
      SELECT delivery_id FROM delivery_queue
      WHERE destination_id = $3 AND next_attempt_at <= $4
      ORDER BY next_attempt_at, delivery_id LIMIT $5
      FOR UPDATE SKIP LOCKED))
    RETURNING delivery_id)
  SELECT array_agg(delivery_id)::text AS ids FROM leased`;

/** The deliveries a claim leased ($1 their ids), by primary key. Exported for the test of its plan. */
export const claimedSql = `SELECT ${claimColumns} FROM deliveries WHERE id = ANY($1::bigint[]) ORDER BY id`;

/**
 * Inserts delivery rows (the INSERT given, without RETURNING) and their queue rows, due when
 * the delivery row says, in one statement.
 */
const queued = (insert: string): string => `WITH d AS (${insert} RETURNING id, destination_id, next_attempt_at)
  INSERT INTO delivery_queue (delivery_id, destination_id, next_attempt_at) SELECT id, destination_id, next_attempt_at FROM d`;

/**
 * A delivery as the admin API shows it: while pending, its due time (a lease's end while
 * held) is the queue row's. Reads `deliveries d LEFT JOIN delivery_queue q`.
 */
const deliveryColumns = `d.id, d.destination_id, d.source_id, d.kind, d.status, d.message_id, d.user_id, d.attempt_count, d.created_at,
  d.first_attempt_at, COALESCE(q.next_attempt_at, d.next_attempt_at) AS next_attempt_at, d.completed_at, d.dead_reason, d.last_error`;

/**
 * The store for several nodes: PostgreSQL through a connection pool. Every node claims due
 * jobs with `FOR UPDATE SKIP LOCKED` under a lease, so nodes never send the same job at once
 * and a node that dies leaves jobs that another picks up when the lease runs out. Each
 * ingestion request commits in its own transaction before it is answered.
 */
export class PgStore implements Store {
  readonly kind = 'postgres' as const;
  /**
   * A claim takes a few milliseconds (it commits durably), which a destination answering in one
   * millisecond must not spend idle: with 80 held ready, a slot found nothing ready a quarter
   * of the time (see delivery/ready-limits.ts).
   */
  readonly defaultClaimBatchSize = 400;
  private readonly pool: pg.Pool;
  /**
   * Connections for completions, which commit without waiting for the WAL flush
   * (`synchronous_commit = off`): nobody is answered on them, and a database crash that
   * loses the last of them leaves those jobs leased, so they are sent again once the lease
   * runs out (delivery is at least once). Claims stay fully durable ({@link claimPool}): a claim
   * undone by a crash while its worker goes on sending would let another node send the same
   * job at the same time.
   */
  private readonly completionPool: pg.Pool;
  /** Connections for claims, with {@link claimPlanner}; durable like {@link pool}. */
  private readonly claimPool: pg.Pool;
  /**
   * Completions of many jobs go to the server as one statement (group completion), at most
   * one statement every {@link completionIntervalMs}: without the wait a statement took about
   * 13 jobs, since a completion commits in a fraction of a millisecond, and each statement
   * costs the database and this process a fixed share beside its rows.
   */
  private readonly completions = new Batcher<Completion, boolean>((items) => this.completeMany(items), {
    maxBatch: 500,
    parallel: 1,
    minIntervalMs: completionIntervalMs,
  });

  private constructor(pool: pg.Pool, completionPool: pg.Pool, claimPool: pg.Pool) {
    this.pool = pool;
    this.completionPool = completionPool;
    this.claimPool = claimPool;
  }

  /** Connects, creates the schema if needed, and applies pending migrations. */
  static async open(options: PgStoreOptions): Promise<PgStore> {
    const schema = options.schema ?? 'public';
    if (!schemaName.test(schema)) throw new Error(`invalid schema name ${JSON.stringify(schema)}`);
    const poolOptions = (max: number, settings = ''): pg.PoolConfig => ({
      connectionString: options.connectionString,
      max,
      options: `-c search_path=${schema} ${settings}`.trim(),
      types: typeParsers,
      // A server that is down or unreachable must fail a request (503) rather than hang it.
      connectionTimeoutMillis: 5000,
    });
    const pool = new pg.Pool(poolOptions(options.poolSize ?? 10));
    const completionPool = new pg.Pool(poolOptions(2, `-c synchronous_commit=off ${completionPlanner}`));
    // A worker claims one destination at a time; a second connection covers a second worker.
    const claimPool = new pg.Pool(poolOptions(2, claimPlanner));
    // An idle client's error (e.g. the server restarted) must not crash the process; the next query reconnects.
    for (const p of [pool, completionPool, claimPool]) p.on('error', () => {});
    const store = new PgStore(pool, completionPool, claimPool);
    try {
      await store.migrate(schema);
    } catch (error) {
      await store.endPools();
      throw error;
    }
    return store;
  }

  /**
   * A pooled client for several statements. While checked out it has an error listener of its
   * own: a connection the server ends between two statements (a restart) must fail the work in
   * hand, not crash the process with an unhandled 'error' event.
   */
  private async checkout(): Promise<pg.PoolClient & { done(): void }> {
    const client = await this.pool.connect();
    let failure: Error | undefined;
    const onError = (error: Error) => (failure = error);
    client.on('error', onError);
    return Object.assign(client, {
      done() {
        client.removeListener('error', onError);
        // A client whose connection failed is discarded rather than returned to the pool.
        client.release(failure);
      },
    });
  }

  private async migrate(schema: string): Promise<void> {
    const client = await this.checkout();
    try {
      // One node migrates at a time; the others wait, then find nothing left to do.
      await client.query(`SELECT pg_advisory_lock(hashtext('ferry_migrations_' || $1))`, [schema]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await client.query(`CREATE TABLE IF NOT EXISTS ferry_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`);
      const { rows } = await client.query<{ v: number | null }>(`SELECT MAX(version) AS v FROM ferry_migrations`);
      const current = rows[0]?.v ?? 0;
      for (const m of migrations) {
        if (m.version <= current) continue;
        await client.query('BEGIN');
        await client.query(m.sql);
        await client.query(`INSERT INTO ferry_migrations (version, applied_at) VALUES ($1, $2)`, [m.version, Date.now()]);
        await client.query('COMMIT');
      }
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      await client.query(`SELECT pg_advisory_unlock(hashtext('ferry_migrations_' || $1))`, [schema]).catch(() => {});
      client.done();
    }
  }

  private async inTransaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.checkout();
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.done();
    }
  }

  /**
   * Runs `work` in one transaction on one pooled connection, for stores built on this one
   * (audiences) whose own writes must commit or roll back together with the delivery jobs
   * they queue. `enqueue` inserts jobs on that connection exactly as {@link enqueue} does.
   */
  withTransaction<T>(work: (client: pg.PoolClient, enqueue: (deliveries: readonly NewDelivery[], nowMs: number) => Promise<void>) => Promise<T>): Promise<T> {
    return this.inTransaction((client) => work(client, (deliveries, nowMs) => (deliveries.length === 0 ? Promise.resolve() : insertLoose(client, deliveries, nowMs))));
  }

  async ingest(write: IngestWrite): Promise<IngestOutcome> {
    const outcome: IngestOutcome = { inserted: 0, duplicates: 0, deliveries: 0 };
    if (write.events.length === 0 && write.rejections.length === 0) return outcome;
    return this.inTransaction(async (client) => {
      if (write.events.length > 0) {
        const e = write.events;
        const inserted = await client.query<{ id: number; message_id: string }>(
          `INSERT INTO events (source_id, message_id, type, user_id, anonymous_id, event, received_at, json)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[])
           ON CONFLICT (source_id, message_id) DO NOTHING
           RETURNING id, message_id`,
          [
            e.map((x) => x.sourceId),
            e.map((x) => x.messageId),
            e.map((x) => x.type),
            e.map((x) => x.userId ?? null),
            e.map((x) => x.anonymousId ?? null),
            e.map((x) => x.event ?? null),
            e.map((x) => x.receivedAtMs),
            e.map((x) => x.json),
          ],
        );
        outcome.inserted = inserted.rows.length;
        outcome.duplicates = e.length - inserted.rows.length;
        const idByMessage = new Map(inserted.rows.map((r) => [r.message_id, r.id]));
        const d: { destinationId: string; sourceId: string; eventId: number; kind: string; messageId: string; userId: string | null; body: string; at: number }[] = [];
        for (const event of e) {
          const eventId = idByMessage.get(event.messageId);
          if (eventId === undefined) continue;
          // A messageId repeated inside one write is stored once; route only its first copy.
          idByMessage.delete(event.messageId);
          for (const job of event.deliveries)
            d.push({ destinationId: job.destinationId, sourceId: event.sourceId, eventId, kind: job.kind, messageId: event.messageId, userId: event.userId ?? null, body: job.body, at: event.receivedAtMs });
        }
        if (d.length > 0) {
          await client.query(
            queued(`INSERT INTO deliveries (destination_id, source_id, event_id, kind, message_id, user_id, body, created_at, next_attempt_at)
             SELECT a, b, c, k, m, u, body, t, t FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[])
               AS x(a, b, c, k, m, u, body, t)`),
            [d.map((x) => x.destinationId), d.map((x) => x.sourceId), d.map((x) => x.eventId), d.map((x) => x.kind), d.map((x) => x.messageId), d.map((x) => x.userId), d.map((x) => x.body), d.map((x) => x.at)],
          );
        }
        outcome.deliveries = d.length;
      }
      if (write.rejections.length > 0) {
        const r = write.rejections;
        const now = write.receivedAtMs;
        await client.query(
          `INSERT INTO rejections (source_id, batch_index, code, message, received_at)
           SELECT s, i, c, m, $5 FROM unnest($1::text[], $2::int[], $3::text[], $4::text[]) AS x(s, i, c, m)`,
          [r.map((x) => x.sourceId), r.map((x) => x.index), r.map((x) => x.code), r.map((x) => x.message), now],
        );
        await client.query(
          `INSERT INTO rejection_counts (source_id, code, count)
           SELECT s, c, COUNT(*) FROM unnest($1::text[], $2::text[]) AS x(s, c) GROUP BY s, c
           ON CONFLICT (source_id, code) DO UPDATE SET count = rejection_counts.count + excluded.count`,
          [r.map((x) => x.sourceId), r.map((x) => x.code)],
        );
        await client.query(`DELETE FROM rejections WHERE id <= (SELECT MAX(id) FROM rejections) - ${keptRejections}`);
      }
      return outcome;
    });
  }

  async nextDueAt(destinationIds: string[]): Promise<number | null> {
    if (destinationIds.length === 0) return null;
    const { rows } = await this.pool.query<{ due: number | null }>(nextDueSql, [destinationIds]);
    return rows[0]?.due ?? null;
  }

  async claim(args: { destinationId: string; owner: string; nowMs: number; leaseMs: number; limit: number }): Promise<ClaimedDelivery[]> {
    const leased = await this.claimPool.query<{ ids: string | null }>({
      // Named: parsed once per connection, and after a few runs planned once: its plan (the due
      // index in order, then the jobs taken by id) suits every destination and backlog, and
      // planning it each time took a third as long as running it (0.6 ms against 1.8 for 55 jobs).
      name: 'ferry-claim',
      text: claimSql,
      values: [args.owner, args.nowMs + args.leaseMs, args.destinationId, args.nowMs, args.limit],
    });
    const ids = leased.rows[0]?.ids;
    if (!ids) return [];
    // A delivery purged by a deletion request since (its queue row went with it) is simply absent.
    const { rows } = await this.claimPool.query<ClaimTuple & unknown[]>({
      name: 'ferry-claimed',
      text: claimedSql,
      values: [ids],
      rowMode: 'array',
    });
    return rows.map(toClaimed);
  }

  complete(args: Completion): Promise<boolean> {
    return this.completions.add(args);
  }

  /**
   * Records the outcomes of many jobs in one statement, so one round trip and atomic without
   * BEGIN/COMMIT: each job's new state and its attempt log. A job whose lease was lost still
   * logs what was sent; a delivery purged meanwhile (a deletion request) keeps nothing, since
   * a response body may echo the user's data.
   */
  private async completeMany(items: Completion[]): Promise<(boolean | ItemFailure)[]> {
    try {
      return await this.completeTogether(items);
    } catch (error) {
      // One item the database refuses (bad data, a deadlock) must not cost the others their
      // record: each is then tried alone. Not when the database is out of reach, where that
      // would only multiply the failures.
      const code = (error as { code?: unknown }).code;
      if (items.length === 1 || typeof code !== 'string' || !/^(22|23|40)/.test(code)) throw error;
      return Promise.all(items.map((item) => this.completeTogether([item]).then(([kept]) => kept!, (e: unknown) => new ItemFailure(e))));
    }
  }

  private async completeTogether(items: Completion[]): Promise<boolean[]> {
    // In id order, so that its deletes and its updates each lock queue rows in the order
    // abandonPending and deletion requests do, and the attempt log's key-share locks on
    // deliveries follow it as a purge's deletes do. The two steps run one after the other, so a
    // deadlock with those remains possible; the database then cancels one side: a group is
    // tried again item by item, and a purge or an abandon fails and is run again.
    const sorted = [...items].sort((a, b) => a.id - b.id);
    const jobs = sorted.map((c) => {
      const o = c.outcome;
      return {
        i: c.id,
        o: c.owner,
        f: c.firstAttemptAtMs,
        s: o.status,
        n: o.status === 'pending' ? o.nextAttemptAtMs : null,
        c: o.status === 'pending' ? null : c.nowMs,
        r: o.status === 'dead' ? o.reason : null,
        e: o.status === 'succeeded' ? null : storedText(o.lastError),
        a: c.attempts.map(toLogEntry),
      };
    });
    const { rows } = await this.completionPool.query<{ id: number }>({
      // Named: planned once after a few runs, since planning it took longer than running it for a
      // small group; its plan (a primary-key lookup per item) does not depend on the values.
      name: 'ferry-complete',
      text: completeSql,
      values: [JSON.stringify(jobs)],
    });
    const lost = new Set(rows.map((r) => r.id));
    // A notice delivered has done its work; kept, it would name the user it was about. On the
    // durable pool: a crash must not bring the row back.
    const delivered = sorted.filter((c) => c.kind === 'delete' && c.outcome.status === 'succeeded' && !lost.has(c.id)).map((c) => c.id);
    await deleteDeliveries(this.pool, delivered);
    return items.map((c) => !lost.has(c.id));
  }

  async releaseLeases(owner: string, nowMs: number, leases?: readonly HeldLease[]): Promise<number> {
    if (leases === undefined) {
      const r = await this.pool.query(`UPDATE delivery_queue SET lease_owner = NULL, next_attempt_at = $1 WHERE lease_owner = $2`, [nowMs, owner]);
      return r.rowCount ?? 0;
    }
    if (leases.length === 0) return 0;
    // A lease is its owner and its end: a later claim of the same job (after this one ran
    // out) set another end. The job takes its place in line again: the due time it had before
    // it was claimed, which the delivery row keeps, if that has come. Queue rows are locked in
    // id order first, as abandonPending and deletion requests lock them.
    const r = await this.pool.query(
      `UPDATE delivery_queue q SET lease_owner = NULL, next_attempt_at = LEAST($1, d.next_attempt_at)
       FROM deliveries d
       WHERE d.id = q.delivery_id AND q.delivery_id IN (
         SELECT h.delivery_id FROM delivery_queue h JOIN unnest($3::bigint[], $4::bigint[]) AS l(id, until) ON h.delivery_id = l.id
         WHERE h.lease_owner = $2 AND h.next_attempt_at = l.until
         ORDER BY h.delivery_id FOR UPDATE OF h)`,
      [nowMs, owner, leases.map((l) => l.id), leases.map((l) => l.leasedUntilMs)],
    );
    return r.rowCount ?? 0;
  }

  async abandonPending(destinationId: string, nowMs: number): Promise<number> {
    const r = await this.pool.query(
      `WITH q AS (
         DELETE FROM delivery_queue WHERE delivery_id IN (SELECT delivery_id FROM delivery_queue WHERE destination_id = $2 ORDER BY delivery_id FOR UPDATE)
         RETURNING delivery_id)
       UPDATE deliveries SET status = 'dead', dead_reason = 'destination_deleted', completed_at = $1, last_error = 'the destination was deleted'
       WHERE id IN (SELECT delivery_id FROM q)`,
      [nowMs, destinationId],
    );
    return r.rowCount ?? 0;
  }

  async enqueue(deliveries: NewDelivery[], nowMs: number): Promise<void> {
    if (deliveries.length === 0) return;
    await insertLoose(this.pool, deliveries, nowMs);
  }

  async listDeliveries(filter: DeliveryFilter): Promise<DeliveryView[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (clause: string, value: unknown) => {
      params.push(value);
      where.push(clause.replace('?', `$${params.length}`));
    };
    if (filter.status) add('d.status = ?', filter.status);
    // The dead-letter index holds the rows with a reason, which are exactly the dead ones.
    if (filter.status === 'dead') where.push('d.dead_reason IS NOT NULL');
    if (filter.destinationId) add('d.destination_id = ?', filter.destinationId);
    if (filter.sourceId) add('d.source_id = ?', filter.sourceId);
    if (filter.messageId) add('d.message_id = ?', filter.messageId);
    if (filter.afterId !== undefined) add('d.id > ?', filter.afterId);
    params.push(filter.limit);
    // Pending deliveries are the queue's rows: found from there rather than among all.
    const join = filter.status === 'pending' ? 'JOIN' : 'LEFT JOIN';
    const { rows } = await this.pool.query<DeliveryRow>(
      `SELECT ${deliveryColumns} FROM deliveries d ${join} delivery_queue q ON q.delivery_id = d.id
       ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY d.id LIMIT $${params.length}`,
      params,
    );
    return rows.map(toDeliveryView);
  }

  async getDelivery(id: number): Promise<{ delivery: DeliveryView; body: string; attempts: AttemptView[] } | null> {
    const { rows } = await this.pool.query<DeliveryRow & { body: string; first_attempt_log: string | null }>(
      `SELECT ${deliveryColumns}, d.body, d.first_attempt_log FROM deliveries d LEFT JOIN delivery_queue q ON q.delivery_id = d.id WHERE d.id = $1`,
      [id],
    );
    const row = rows[0];
    if (!row) return null;
    const attempts = await this.pool.query<AttemptRow>(`SELECT * FROM attempts WHERE delivery_id = $1 ORDER BY id`, [id]);
    return { delivery: toDeliveryView(row), body: row.body, attempts: attemptLog(row.first_attempt_log, attempts.rows) };
  }

  async replay(filter: ReplayFilter, nowMs: number): Promise<number> {
    // `dead_reason` marks exactly the dead letters, and the dead-letter index holds those rows.
    const where = [`status = 'dead'`, `dead_reason IS NOT NULL`];
    const params: unknown[] = [nowMs];
    if (filter.ids) {
      if (filter.ids.length === 0) return 0;
      params.push(filter.ids);
      where.push(`id = ANY($${params.length}::bigint[])`);
    }
    if (filter.destinationId) (params.push(filter.destinationId), where.push(`destination_id = $${params.length}`));
    if (filter.sinceMs !== undefined) (params.push(filter.sinceMs), where.push(`completed_at >= $${params.length}`));
    if (filter.destinationIdsIn) {
      if (filter.destinationIdsIn.length === 0) return 0;
      params.push(filter.destinationIdsIn);
      where.push(`destination_id = ANY($${params.length}::text[])`);
    }
    // A replay opens a fresh retry window: the old one has run out by definition.
    const r = await this.pool.query(
      queued(`UPDATE deliveries SET status = 'pending', trigger = 'manual', next_attempt_at = $1, first_attempt_at = NULL, attempt_count = 0,
         completed_at = NULL, dead_reason = NULL
       WHERE ${where.join(' AND ')}`),
      params,
    );
    return r.rowCount ?? 0;
  }

  async listRejections(args: { sourceId?: string; limit: number }) {
    const { rows } = args.sourceId
      ? await this.pool.query(`SELECT * FROM rejections WHERE source_id = $1 ORDER BY id DESC LIMIT $2`, [args.sourceId, args.limit])
      : await this.pool.query(`SELECT * FROM rejections ORDER BY id DESC LIMIT $1`, [args.limit]);
    return (rows as { source_id: string; batch_index: number; code: string; message: string; received_at: number }[]).map((r) => ({
      sourceId: r.source_id,
      index: r.batch_index,
      code: r.code,
      message: r.message,
      receivedAt: iso(r.received_at)!,
    }));
  }

  async rejectionCounts() {
    const { rows } = await this.pool.query<{ source_id: string; code: string; count: number }>(
      `SELECT source_id, code, count FROM rejection_counts ORDER BY source_id, code`,
    );
    return rows.map((r) => ({ sourceId: r.source_id, code: r.code, count: r.count }));
  }

  async stats(): Promise<StoreStats> {
    const deliveries: StoreStats['deliveries'] = { pending: 0, succeeded: 0, dead: 0 };
    const byStatus = await this.pool.query<{ status: keyof StoreStats['deliveries']; n: number }>(
      `SELECT status, COUNT(*)::bigint AS n FROM deliveries GROUP BY status`,
    );
    for (const r of byStatus.rows) deliveries[r.status] = r.n;
    const events = await this.pool.query<{ n: number }>(`SELECT COUNT(*)::bigint AS n FROM events`);
    const rejections = await this.pool.query<{ n: number }>(`SELECT COALESCE(SUM(count), 0)::bigint AS n FROM rejection_counts`);
    return { events: events.rows[0]!.n, deliveries, rejections: rejections.rows[0]!.n };
  }

  async createRegulation(args: { id: string; userIds: string[]; sourceIds: string[] | null; nowMs: number }): Promise<Regulation> {
    await this.pool.query(`INSERT INTO regulations (id, user_ids, user_count, source_ids, status, created_at) VALUES ($1, $2, $3, $4, 'pending', $5)`, [
      args.id,
      JSON.stringify(args.userIds),
      args.userIds.length,
      args.sourceIds === null ? null : JSON.stringify(args.sourceIds),
      args.nowMs,
    ]);
    return (await this.getRegulation(args.id))!;
  }

  async getRegulation(id: string): Promise<Regulation | null> {
    const { rows } = await this.pool.query<RegulationRow>(`SELECT * FROM regulations WHERE id = $1`, [id]);
    return rows[0] ? toRegulation(rows[0]) : null;
  }

  async pendingRegulations(): Promise<Regulation[]> {
    const { rows } = await this.pool.query<RegulationRow>(`SELECT * FROM regulations WHERE status = 'pending' ORDER BY created_at`);
    return rows.map(toRegulation);
  }

  async executeRegulation(args: {
    id: string;
    nowMs: number;
    noticesFor: (affected: AffectedSources) => DeleteNotice[];
    batchSize?: number;
  }): Promise<Regulation> {
    const plan = await this.inTransaction((client) => planOf(client, args.id));
    if (plan !== undefined) {
      const limit = args.batchSize ?? defaultPurgeBatchSize;
      for (const [column, ids] of [['user_id', plan.plan.userIds], ['anonymous_id', plan.plan.anonymousIds]] as const)
        for (const id of ids)
          // Each batch commits on its own: its locks are held only that long.
          while ((await this.inTransaction((client) => purgeBatch(client, args.id, plan, column, id, limit))) === limit);
      await this.inTransaction((client) => finishRegulation(client, args.id, plan.plan, args.noticesFor, args.nowMs));
    }
    return (await this.getRegulation(args.id))!;
  }

  async reclaimDeleted(): Promise<void> {
    // Outside a transaction, as VACUUM must be. Ingestion and delivery go on meanwhile (docs/operations.md#deleted-data).
    await this.pool.query(`VACUUM ${purgedTables.join(', ')}`);
  }

  async loadCatalog(): Promise<{ sources: SourceConfig[]; destinations: DestinationConfig[] }> {
    const sources = await this.pool.query<{ config: string }>(`SELECT config FROM sources ORDER BY id`);
    const destinations = await this.pool.query<{ config: string }>(`SELECT config FROM destinations ORDER BY id`);
    return {
      sources: sources.rows.map((r) => JSON.parse(r.config) as SourceConfig),
      destinations: destinations.rows.map((r) => JSON.parse(r.config) as DestinationConfig),
    };
  }

  async saveSource(source: SourceConfig): Promise<void> {
    await this.pool.query(`INSERT INTO sources (id, config) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET config = excluded.config`, [source.id, JSON.stringify(source)]);
  }

  async deleteSource(id: string): Promise<void> {
    await this.pool.query(`DELETE FROM sources WHERE id = $1`, [id]);
  }

  async saveDestination(destination: DestinationConfig): Promise<void> {
    await this.pool.query(`INSERT INTO destinations (id, config) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET config = excluded.config`, [
      destination.id,
      JSON.stringify(destination),
    ]);
  }

  async deleteDestination(id: string): Promise<void> {
    await this.pool.query(`DELETE FROM destinations WHERE id = $1`, [id]);
  }

  async getSetting(key: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ value: string }>(`SELECT value FROM settings WHERE key = $1`, [key]);
    return rows[0]?.value ?? null;
  }

  async setSetting(key: string, value: string): Promise<void> {
    await this.pool.query(`INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [key, value]);
  }

  /** The server answers a query (the schema was migrated before the store was opened). */
  async checkReady(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  async close(): Promise<void> {
    // Completions already handed in still reach the database: their jobs were sent.
    await this.completions.drained();
    await this.endPools();
  }

  private async endPools(): Promise<void> {
    await Promise.all([this.pool.end(), this.completionPool.end(), this.claimPool.end()]);
  }
}

/** The tables a deletion request (or a delivered notice) deletes rows from. */
const purgedTables = ['events', 'deliveries', 'attempts', 'delivery_queue', 'audience_members', 'regulations'];

/**
 * The stored plan of a pending regulation, made and stored first if it has none. The row is
 * locked, so two nodes resuming the same request make one plan between them.
 */
async function planOf(client: pg.PoolClient, id: string): Promise<{ plan: RegulationPlan; scope: string[] | null } | undefined> {
  const { rows } = await client.query<RegulationRow>(`SELECT * FROM regulations WHERE id = $1 FOR UPDATE`, [id]);
  const row = rows[0];
  if (!row || row.status !== 'pending') return undefined;
  const scope = row.source_ids === null ? null : (JSON.parse(row.source_ids) as string[]);
  if (row.plan !== null) return { plan: JSON.parse(row.plan) as RegulationPlan, scope };
  const links = new LinkedIdentities(JSON.parse(row.user_ids) as string[]);
  const previous = `(json::jsonb ->> 'previousId')`;
  for (let ids = links.unexplored(); ids.length > 0; ids = links.unexplored()) {
    const found = await client.query<[string, string]>({
      text: `SELECT ${previous}, user_id FROM events WHERE type = 'alias' AND user_id = ANY($1::text[])
             UNION SELECT ${previous}, user_id FROM events WHERE type = 'alias' AND ${previous} = ANY($1::text[])`,
      values: [ids],
      rowMode: 'array',
    });
    links.addAliases(found.rows);
  }
  const userIds = links.userIds();
  const anonymous = await client.query<[string, string]>({
    text: `SELECT DISTINCT user_id, anonymous_id FROM events WHERE user_id = ANY($1::text[]) AND anonymous_id IS NOT NULL`,
    values: [userIds],
    rowMode: 'array',
  });
  links.addAnonymous(anonymous.rows);
  const max = await client.query<{ max: number }>(`SELECT COALESCE(MAX(id), 0)::bigint AS max FROM events`);
  const maxEventId = max.rows[0]!.max;
  const inScope = scope === null ? '' : `AND source_id = ANY($3::text[])`;
  const held = async (sql: string, ids: string[]) =>
    (await client.query<[string, string]>({ text: `${sql} AND id <= $2 ${inScope}`, values: scope === null ? [ids, maxEventId] : [ids, maxEventId, scope], rowMode: 'array' })).rows;
  const byUser = await held(`SELECT DISTINCT source_id, user_id FROM events WHERE user_id = ANY($1::text[])`, userIds);
  const byAnonymous = await held(
    `SELECT DISTINCT source_id, anonymous_id FROM events WHERE anonymous_id = ANY($1::text[]) AND user_id IS NULL`,
    links.anonymousIds(),
  );
  const plan = links.plan(maxEventId, byUser, byAnonymous);
  await client.query(`UPDATE regulations SET plan = $1 WHERE id = $2`, [JSON.stringify(plan), id]);
  return { plan, scope };
}

/**
 * Deletes up to `limit` events of one identity (a user id, or an anonymous id on events
 * without one), with their deliveries and attempts, and counts them on the request. Resolves
 * with how many events it deleted: fewer than `limit` when none is left.
 */
async function purgeBatch(
  client: pg.PoolClient,
  id: string,
  { plan, scope }: { plan: RegulationPlan; scope: string[] | null },
  column: 'user_id' | 'anonymous_id',
  identity: string,
  limit: number,
): Promise<number> {
  // Each statement must see what committed before it (see deleteDeliveries), whatever the server's default isolation.
  await client.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
  const only = column === 'anonymous_id' ? 'AND user_id IS NULL' : '';
  const inScope = scope === null ? '' : `AND source_id = ANY($4::text[])`;
  const { rows: events } = await client.query<{ id: number; source_id: string; message_id: string }>(
    `SELECT id, source_id, message_id FROM events WHERE ${column} = $1 ${only} AND id <= $2 ${inScope} LIMIT $3 FOR UPDATE`,
    scope === null ? [identity, plan.maxEventId, limit] : [identity, plan.maxEventId, limit, scope],
  );
  if (events.length === 0) return 0;
  // Deliveries are found by (source, messageId), which an index covers, as events are unique on it.
  const { rows: found } = await client.query<{ ids: number[] | null }>(
    `SELECT array_agg(d.id) AS ids FROM deliveries d JOIN unnest($1::text[], $2::text[]) AS e(s, m) ON d.message_id = e.m AND d.source_id = e.s
     WHERE d.kind = 'event'`,
    [events.map((e) => e.source_id), events.map((e) => e.message_id)],
  );
  const deliveries = found[0]?.ids ?? [];
  await deleteDeliveries(client, deliveries);
  await client.query(`DELETE FROM events WHERE id = ANY($1::bigint[])`, [events.map((e) => e.id)]);
  await client.query(`UPDATE regulations SET events_deleted = events_deleted + $1, deliveries_deleted = deliveries_deleted + $2 WHERE id = $3`, [
    events.length,
    deliveries.length,
    id,
  ]);
  return events.length;
}

/**
 * Deletes deliveries (ids read once: read again by each statement, a delivery queued in
 * between would lose its row but keep its queue row, or the other way round) and their attempts.
 */
async function deleteDeliveries(client: pg.PoolClient | pg.Pool, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  // The queue rows first, in the order the claim and the completion lock them.
  await client.query(
    `DELETE FROM delivery_queue WHERE delivery_id IN (SELECT delivery_id FROM delivery_queue WHERE delivery_id = ANY($1::bigint[]) ORDER BY delivery_id FOR UPDATE)`,
    [ids],
  );
  // Deliveries before their attempts, locked in id order: a completion logging an attempt
  // for one of them holds a key-share lock on it until it commits, so the attempts deleted
  // after (by a statement of their own, which sees that commit) include its row.
  await client.query(`DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE)`, [ids]);
  await client.query(`DELETE FROM attempts WHERE delivery_id = ANY($1::bigint[])`, [ids]);
}

/**
 * The last step, in one transaction: the audience deliveries and memberships of the user ids
 * left with no event, the notices, the request marked done with its user ids forgotten.
 */
async function finishRegulation(
  client: pg.PoolClient,
  id: string,
  plan: RegulationPlan,
  noticesFor: (affected: AffectedSources) => DeleteNotice[],
  nowMs: number,
): Promise<void> {
  await client.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
  const { rows } = await client.query<{ status: string }>(`SELECT status FROM regulations WHERE id = $1 FOR UPDATE`, [id]);
  if (rows[0]?.status !== 'pending') return;
  // Audience syncs lock their audience row: taking them all here makes a sync either finish
  // before this step or start after it, never queue an identify for a user just deleted.
  await client.query(`SELECT id FROM audiences ORDER BY id FOR UPDATE`);
  const { rows: gone } = await client.query<{ ids: string[] | null }>(
    `SELECT array_agg(u) AS ids FROM unnest($1::text[]) AS u WHERE NOT EXISTS (SELECT 1 FROM events WHERE user_id = u)`,
    [plan.userIds],
  );
  const users = gone[0]?.ids ?? [];
  const { rows: found } = await client.query<{ ids: number[] | null }>(
    `SELECT array_agg(id) AS ids FROM deliveries WHERE kind = 'audience' AND user_id = ANY($1::text[])`,
    [users],
  );
  const audience = found[0]?.ids ?? [];
  await deleteDeliveries(client, audience);
  await client.query(`DELETE FROM audience_members WHERE audience_id IN (SELECT id FROM audiences) AND user_id = ANY($1::text[])`, [users]);
  const notices = noticesFor(plan.affected);
  if (notices.length > 0)
    await insertLoose(
      client,
      notices.map((n) => ({ destinationId: n.destinationId, sourceId: n.sourceId, kind: 'delete' as const, userId: n.userId, body: n.body })),
      nowMs,
    );
  await client.query(
    `UPDATE regulations SET status = 'done', finished_at = $1, deliveries_deleted = deliveries_deleted + $2, notifications_queued = $3,
       user_ids = '[]', plan = NULL
     WHERE id = $4`,
    [nowMs, audience.length, notices.length, id],
  );
}

async function insertLoose(db: pg.Pool | pg.PoolClient, d: readonly NewDelivery[], nowMs: number): Promise<void> {
  await db.query(
    queued(`INSERT INTO deliveries (destination_id, source_id, event_id, kind, message_id, user_id, body, created_at, next_attempt_at)
     SELECT a, b, NULL, k, m, u, body, $7, $7 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
       AS x(a, b, k, m, u, body)`),
    [d.map((x) => x.destinationId), d.map((x) => x.sourceId ?? null), d.map((x) => x.kind), d.map((x) => x.messageId ?? null), d.map((x) => x.userId ?? null), d.map((x) => x.body), nowMs],
  );
}
