import type pg from 'pg';
import { Batcher, ItemFailure } from '../../util/batcher.js';
import type { DeadReason } from '../../model/attempt.js';
import type { Completion } from '../delivery-queue.js';
import { storedText } from '../rows.js';
import { toLogEntry, type LogEntry } from './attempt-log.js';
import { deleteDeliveries } from './pg-delivery-rows.js';

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
 * row at all. Deliveries it finishes (succeeded or dead; every delivery with a queue row was
 * pending) add one row to the store's totals (`counted`, migration 17). Runs on connections
 * with {@link completionPlanner}. Exported for the test of
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
    RETURNING d.id, d.status, found.first_attempt_log IS NULL AS inline
  ), counted AS (
    INSERT INTO store_total_deltas (succeeded, dead)
    SELECT COUNT(*) FILTER (WHERE status = 'succeeded'), COUNT(*) FILTER (WHERE status = 'dead') FROM updated
    HAVING COUNT(*) FILTER (WHERE status <> 'pending') > 0
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
 * One job of {@link completeSql}'s $1, as the statement's `json_to_recordset` reads it. The keys
 * are one letter, as in {@link LogEntry}: every completion sends them, up to 500 jobs a
 * statement, and the database parses each byte (about 1.1 ms per 400 jobs, docs/performance.md).
 */
export interface CompletionJob {
  /** The delivery's id. */
  i: number;
  /** The lease owner that sent it. */
  o: string;
  /** `first_attempt_at`: start of the retry window. */
  f: number;
  /** The new status. */
  s: Completion['outcome']['status'];
  /** `next_attempt_at` of a job to retry; null otherwise. */
  n: number | null;
  /** `completed_at` of a job done (succeeded or dead); null for a retry. */
  c: number | null;
  /** `dead_reason` of a dead letter; null otherwise. */
  r: DeadReason | null;
  /** `last_error`; null on success. */
  e: string | null;
  /** The attempt log, one entry per URL. */
  a: LogEntry[];
}

/**
 * Least time between two completion statements. An outcome waits about this long to be
 * recorded (longer while the previous statement runs), its job still leased, while the next
 * webhook is already on its way.
 */
const completionIntervalMs = 10;

/**
 * Completions on PostgreSQL: many jobs' outcomes recorded by one statement, on connections
 * that commit without waiting for the WAL flush (see `PgPools` in pg-pools.ts).
 */
export class PgCompletions {
  /**
   * Completions of many jobs go to the server as one statement (group completion), at most
   * one statement every {@link completionIntervalMs}: without the wait a statement took about
   * 13 jobs, since a completion commits in a fraction of a millisecond, and each statement
   * costs the database and this process a fixed share beside its rows.
   */
  private readonly batches = new Batcher<Completion, boolean>((items) => this.completeMany(items), {
    maxBatch: 500,
    parallel: 1,
    minIntervalMs: completionIntervalMs,
  });

  // Not typed as `PgPools`: pg-pools.ts imports the planner settings from here, and the two
  // modules would import each other.
  constructor(private readonly pools: { main: pg.Pool; completion: pg.Pool }) {}

  complete(completion: Completion): Promise<boolean> {
    return this.batches.add(completion);
  }

  /** Resolves once every completion handed in so far has reached the database (or failed). */
  drained(): Promise<void> {
    return this.batches.drained();
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
      return Promise.all(
        items.map((item) =>
          this.completeTogether([item]).then(
            ([kept]) => kept!,
            (e: unknown) => new ItemFailure(e),
          ),
        ),
      );
    }
  }

  private async completeTogether(items: Completion[]): Promise<boolean[]> {
    // In id order, so that its deletes and its updates each lock queue rows in the order
    // abandonPending and deletion requests do, and the attempt log's key-share locks on
    // deliveries follow it as a purge's deletes do. The two steps run one after the other, so a
    // deadlock with those remains possible; the database then cancels one side: a group is
    // tried again item by item, and a purge or an abandon fails and is run again.
    const sorted = [...items].sort((a, b) => a.id - b.id);
    const jobs = sorted.map((c): CompletionJob => {
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
    const { rows } = await this.pools.completion.query<{ id: number }>({
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
    await deleteDeliveries(this.pools.main, delivered);
    return items.map((c) => !lost.has(c.id));
  }
}
