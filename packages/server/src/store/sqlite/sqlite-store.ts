import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { DestinationConfig, SourceConfig } from '../../config/model.js';
import type {
  AttemptView,
  ClaimedDelivery,
  Completion,
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
  AffectedSources,
  DeleteNotice,
} from '../store.js';
import {
  iso,
  storedText,
  keptRejections,
  toAttemptView,
  claimColumns,
  toClaimed,
  toDeliveryView,
  toRegulation,
  type AttemptRow,
  type ClaimTuple,
  type DeliveryRow,
  type RegulationRow,
} from '../rows.js';
import { defaultPurgeBatchSize, LinkedIdentities, type RegulationPlan } from '../../regulations/regulation-plan.js';
import { Batcher } from '../../util/batcher.js';
import { isStoreFailure } from '../store-failure.js';
import { migrations } from './migrations/index.js';

/** Options of the SQLite store. */
export interface SqliteStoreOptions {
  /** Path of the database file; `:memory:` is accepted for throwaway use. */
  path: string;
}

/**
 * When queued work must commit. `durable`: a caller is told "stored" once it commits
 * (ingestion), so the commit is fsynced, at the end of this turn of the event loop. `prompt`:
 * at the end of this turn, without an fsync of its own. `deferred`: within
 * {@link DEFER_MS} (sooner if other work flushes first): delivery bookkeeping, which nobody
 * answers a client on, gains far more from sharing a commit with many others than it loses
 * by waiting a moment.
 */
type CommitMode = 'durable' | 'prompt' | 'deferred';

interface PendingWork {
  run: () => unknown;
  mode: CommitMode;
  resolve: (value: any) => void;
  reject: (error: unknown) => void;
}

/**
 * Makes this store the only one on the file at `path` for as long as it is open: leases live in
 * the store's memory, so a second process delivering from the same file would send every job
 * twice. The lock is an exclusive SQLite lock on a small file beside it (`<path>.lock`),
 * which the operating system drops when the process ends, however it ends; the database file
 * itself stays readable by other tools.
 *
 * Creates the store's directory first, if missing.
 *
 * @throws Error naming the file when another store (in this process or another) holds it, or
 * when the directory or the lock cannot be created or written (see {@link cannotOpen}).
 */
function takeOwnership(path: string): Database.Database {
  let lock: Database.Database | undefined;
  try {
    mkdirSync(dirname(path), { recursive: true });
    lock = new Database(`${path}.lock`, { timeout: 0 });
    // In exclusive mode a connection keeps the locks it takes; the write takes the strongest.
    // The journal in memory: the file holds nothing worth one, and no -journal file is left beside it.
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.pragma('journal_mode = MEMORY');
    lock.pragma('user_version = 1');
    return lock;
  } catch (error) {
    lock?.close();
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY')
      throw new Error(`${path} is in use by another Ferry process; run one Ferry per data directory (or use PostgreSQL for several nodes)`);
    throw cannotOpen(path, error);
  }
}

/**
 * Causes that mean Ferry may not create or write files where its store lives: a read-only
 * file system or file, missing permissions. (A recursive mkdir on a read-only file system
 * reports ENOENT.)
 */
const unwritable = /^(SQLITE_READONLY|SQLITE_CANTOPEN|SQLITE_PERM|EACCES|EPERM|EROFS|ENOENT)/;

/**
 * Why the store at `path` could not be opened, naming it: the driver's own words ("unable to
 * open database file", "attempt to write a readonly database") say neither which file nor
 * what to do. The original error is the cause, and its code stays the error's code.
 */
function cannotOpen(path: string, error: unknown): Error {
  const code = (error as { code?: unknown } | null)?.code;
  const hint =
    typeof code === 'string' && unwritable.test(code)
      ? ' (Ferry must be able to create and write files in its data directory: check its owner, its permissions and that its file system is mounted read-write, or choose another with --data or FERRY_DATA_DIR)'
      : '';
  const wrapped = new Error(`cannot open the SQLite store at ${path}: ${error instanceof Error ? error.message : String(error)}${hint}`, { cause: error });
  return typeof code === 'string' ? Object.assign(wrapped, { code }) : wrapped;
}

/** A job handed to a worker: who holds it, and until when no one else may take it. */
interface Lease {
  owner: string;
  destinationId: string;
  /** The row's created_at: with its id, which job this is (SQLite reuses the ids of deleted rows). */
  createdAtMs: number;
  untilMs: number;
  /** When the lease is dropped even if nothing completed or released it. */
  sweepAtMs: number;
}

/** Whether a completion comes from the worker holding this lease, for the same job. */
function holds(lease: Lease, completion: Completion): boolean {
  return lease.owner === completion.owner && (completion.createdAtMs === undefined || completion.createdAtMs === lease.createdAtMs);
}

/** How long a statement waits for a lock held by another connection before it fails. */
const BUSY_TIMEOUT_MS = 250;
/** While delivery outcomes cannot be recorded, how often a test write is tried. */
const PROBE_INTERVAL_MS = 1000;
/** One claim in this many reads the due jobs from the start (see claim). */
const FULL_READ_EVERY = 8;

/** A claimed row with its place in the due index: {@link claimColumns}, then next_attempt_at. */
type DueClaimTuple = ClaimTuple & { readonly 11: number };

/** Whether a row comes after (due, id) in the due index's order. */
const laterInLine = (row: DueClaimTuple, due: number, id: number): boolean => row[11] > due || (row[11] === due && row[0] > id);

/**
 * A claim that reads on from the last job claimed, (due, id): the rest of that due time by id,
 * then later due times. Two seeks, because a row-value bound (next_attempt_at, id) > (?, ?)
 * is not a seek in SQLite: it read every job sharing the cursor's due time (a replay, an
 * audience sync, a busy millisecond of ingestion) from the first, again at every claim.
 * Exported for the test of its plan.
 */
export const claimAfterSql = `SELECT * FROM (
    SELECT ${claimColumns}, next_attempt_at FROM deliveries INDEXED BY deliveries_due
    WHERE status = 'pending' AND destination_id = @destination AND next_attempt_at = @due AND next_attempt_at <= @now AND id > @id
    ORDER BY id LIMIT @limit)
  UNION ALL
  SELECT * FROM (
    SELECT ${claimColumns}, next_attempt_at FROM deliveries INDEXED BY deliveries_due
    WHERE status = 'pending' AND destination_id = @destination AND next_attempt_at > @due AND next_attempt_at <= @now
    ORDER BY next_attempt_at, id LIMIT @limit)
  LIMIT @limit`;

/** Longest wait of deferred work for its commit. */
const DEFER_MS = 5;

/**
 * The embedded store: one SQLite file in WAL mode with full sync, so a resolved `ingest`
 * has reached the disk. Concurrent ingestion requests are committed together (group commit):
 * every write queued during one turn of the event loop shares a transaction and an fsync.
 * One process owns the file while the store is open (see {@link takeOwnership}), and holds
 * its delivery leases in memory (see {@link SqliteStore.claim}).
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  /**
   * A claim is a read in this process, well under a millisecond: holding more ready gains
   * nothing, and claims of 400 doubled the median delay from ingestion to delivery at half the
   * sustainable rate (4 ms to 7-9 ms).
   */
  readonly defaultClaimBatchSize = 100;
  private readonly db: Database.Database;
  /** Held open for the store's life: see {@link takeOwnership}. */
  private readonly ownership: Database.Database | undefined;
  private pending: PendingWork[] = [];
  private flushImmediate: NodeJS.Immediate | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  /**
   * The completions of one turn of the event loop go into the next group commit as one item:
   * one savepoint for them all rather than one each (if it fails, every one of them is
   * refused, and their jobs come back when their leases run out).
   */
  private readonly completions = new Batcher<Completion, boolean>(
    (batch) =>
      this.inGroupCommit(() => batch.map((c) => this.completeOne(c)), 'deferred').then(
        (kept) => {
          // Only once the outcome is committed: if the commit fails (a full disk), the jobs stay
          // held until their leases run out, instead of being sent again at once, and again.
          for (const c of batch) {
            const lease = this.leases.get(c.id);
            if (lease !== undefined && holds(lease, c)) this.unhold(c.id);
          }
          if (this.noticesForgotten) this.forgetNoticesInWal();
          return kept;
        },
        (error: unknown) => {
          this.recordsFailing = error;
          throw error;
        },
      ),
    { maxBatch: Number.POSITIVE_INFINITY, parallel: Number.POSITIVE_INFINITY },
  );
  private readonly stmts;
  /** Runs a function in a savepoint of the open transaction; made once (better-sqlite3 builds a wrapper per `transaction()` call). */
  private readonly inSavepoint: (run: () => unknown) => unknown;
  /** Runs a group of queued work in one transaction, each item in its own savepoint. */
  private readonly runGroup: (group: PendingWork[]) => ({ ok: true; value: unknown } | { ok: false; error: unknown })[];
  private readonly syncFull: Database.Statement;
  private readonly syncNormal: Database.Statement;
  /** Jobs handed out by {@link claim} and not yet completed or released, by delivery id. */
  private readonly leases = new Map<number, Lease>();
  /** The same leases by destination: what a claim of that destination must skip. */
  private readonly leasesByDestination = new Map<string, Map<number, Lease>>();
  /**
   * Per destination, the due index position of the last job claimed, while it holds any: every
   * job it holds lies at or before it, so a claim may read on from there without skipping
   * them (see {@link claim}), and how many claims did so since one read from the start.
   */
  private readonly claimCursors = new Map<string, { due: number; id: number; after: number }>();
  /** When {@link claim} next drops leases long expired (see {@link sweepLeases}). */
  private nextSweepAtMs = 0;
  /** A delivered notice was deleted, and the WAL still holds it (see {@link forgetNoticesInWal}). */
  private noticesForgotten = false;
  /** Why the last group of completions could not be recorded, until a test write succeeds. */
  private recordsFailing: unknown;
  /** While {@link recordsFailing}, when the next test write may be tried. */
  private nextProbeAtMs = 0;
  /** Why the last group commit failed (a full disk, a lock held elsewhere), until one succeeds. */
  private commitFailing: unknown;

  constructor(options: SqliteStoreOptions) {
    if (options.path !== ':memory:') this.ownership = takeOwnership(options.path);
    let opened: Database.Database | undefined;
    try {
      this.db = opened = new Database(options.path);
      this.db.pragma('journal_mode = WAL');
      // Deleted content is overwritten with zeros, so a deletion request leaves no copy of the
      // user in the file's free space (docs/operations.md#deleted-data has its cost).
      this.db.pragma('secure_delete = ON');
      // NORMAL by default: claims and completions may be lost in a power cut and are then simply
      // redone (delivery is at least once). Commits that acknowledge input switch to FULL.
      this.db.pragma('synchronous = NORMAL');
      // Waiting for a lock blocks the event loop, so wait briefly and let the caller answer 503
      // (ingestion) or retry at the next round (delivery) instead.
      this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      // 32 MB of page cache (the default is 2 MB): a group commit of many requests writes
      // several MB, and spilling dirty pages mid-transaction costs extra WAL writes. Bounded,
      // so memory stays flat however large the backlog grows.
      this.db.pragma('cache_size = -32768');
      this.db.pragma('temp_store = MEMORY');
      // Checkpoint every ~40 MB of WAL instead of every 4 MB: the same hot pages (the due index,
      // the newest rows) are rewritten by many commits between two checkpoints, and each
      // checkpoint copies them to the database file once, with two fsyncs, on this thread.
      this.db.pragma('wal_autocheckpoint = 10000');
      this.migrate();
      const db = this.db;
      this.inSavepoint = db.transaction((run: () => unknown) => run());
      this.runGroup = db.transaction((group: PendingWork[]) =>
        group.map((p): { ok: true; value: unknown } | { ok: false; error: unknown } => {
          try {
            return { ok: true, value: this.inSavepoint(p.run) };
          } catch (error) {
            return { ok: false, error };
          }
        }),
      );
      this.syncFull = db.prepare('PRAGMA synchronous = FULL');
      this.syncNormal = db.prepare('PRAGMA synchronous = NORMAL');
      this.stmts = {
        insertEvent: db.prepare<[string, string, string, string | null, string | null, string | null, number, string], { id: number }>(
          `INSERT INTO events (source_id, message_id, type, user_id, anonymous_id, event, received_at, json)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source_id, message_id) DO NOTHING RETURNING id`,
        ),
        insertDelivery: db.prepare<[string, string | null, number | null, string, string | null, string | null, string, number, number]>(
          `INSERT INTO deliveries (destination_id, source_id, event_id, kind, message_id, user_id, body, created_at, next_attempt_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ),
        insertRejection: db.prepare(
          `INSERT INTO rejections (source_id, batch_index, code, message, received_at) VALUES (?, ?, ?, ?, ?)`,
        ),
        countRejection: db.prepare(
          `INSERT INTO rejection_counts (source_id, code, count) VALUES (?, ?, 1)
           ON CONFLICT (source_id, code) DO UPDATE SET count = count + 1`,
        ),
        pruneRejections: db.prepare(`DELETE FROM rejections WHERE id <= (SELECT MAX(id) FROM rejections) - ${keptRejections}`),
        // Held jobs are skipped in the index (which holds their ids) before any row is read.
        claimFree: db
          .prepare<[string, number, string, number], DueClaimTuple>(
            `SELECT ${claimColumns}, next_attempt_at FROM deliveries INDEXED BY deliveries_due
             WHERE status = 'pending' AND destination_id = ? AND next_attempt_at <= ? AND id NOT IN (SELECT value FROM json_each(?))
             ORDER BY next_attempt_at, id LIMIT ?`,
          )
          .raw(true),
        claimAfter: db
          .prepare<[{ destination: string; now: number; due: number; id: number; limit: number }], DueClaimTuple>(claimAfterSql)
          .raw(true),
        dueTimes: db.prepare<[string, number], { id: number; due: number }>(
          `SELECT id, next_attempt_at AS due FROM deliveries WHERE status = 'pending' AND destination_id = ?
           ORDER BY next_attempt_at, id LIMIT ?`,
        ),
        probeWrite: db.prepare<[number]>(
          `INSERT INTO settings (key, value) VALUES ('store_write_probe', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
        ),
        deliveryExists: db.prepare<[number, number | null, number | null], { one: number }>(
          `SELECT 1 AS one FROM deliveries WHERE id = ? AND (? IS NULL OR created_at = ?)`,
        ),
        // Positional parameters on the two statements of every delivery: binding by name costs more.
        insertAttempt: db.prepare<[number, string, number, number, number | null, string | null, string | null, string | null, string]>(
          `INSERT INTO attempts (delivery_id, url, started_at, latency_ms, status_code, error_class, error_message, response_body, trigger)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ),
        completeSucceeded: db.prepare<[number, number, number]>(
          `UPDATE deliveries SET status = 'succeeded', attempt_count = attempt_count + 1, first_attempt_at = ?,
             completed_at = ?, trigger = 'scheduled', last_error = NULL
           WHERE id = ? AND status = 'pending'`,
        ),
        completeRetry: db.prepare(
          `UPDATE deliveries SET attempt_count = attempt_count + 1, first_attempt_at = @firstAttemptAtMs,
             next_attempt_at = @nextAttemptAtMs, trigger = 'scheduled', last_error = @lastError
           WHERE id = @id AND status = 'pending'`,
        ),
        completeDead: db.prepare(
          `UPDATE deliveries SET status = 'dead', attempt_count = attempt_count + 1, first_attempt_at = @firstAttemptAtMs,
             completed_at = @nowMs, trigger = 'scheduled', dead_reason = @reason, last_error = @lastError
           WHERE id = @id AND status = 'pending'`,
        ),
      };
    } catch (error) {
      // Nothing half-open stays behind, least of all the lock: the next try must not find it taken.
      if (opened?.open) opened.close();
      this.ownership?.close();
      throw cannotOpen(options.path, error);
    }
  }

  private migrate(): void {
    const current = this.db.pragma('user_version', { simple: true }) as number;
    for (const m of migrations) {
      if (m.version <= current) continue;
      this.db.transaction(() => {
        this.db.exec(m.sql);
        this.db.pragma(`user_version = ${m.version}`);
      })();
    }
  }

  ingest(write: IngestWrite): Promise<IngestOutcome> {
    // Only accepted events need an fsync before the answer; a write of rejections alone does not.
    return this.inGroupCommit(() => this.applyWrite(write), write.events.length > 0 ? 'durable' : 'prompt');
  }

  /**
   * Queues work for the next group commit: all work queued during one turn of the event loop
   * (and deferred work of the last few ms) runs in one transaction, so concurrent requests
   * share one fsync and hot pages are written to the WAL once. Each item runs in its own
   * savepoint, so an item that throws is rolled back and rejected alone.
   */
  private inGroupCommit<T>(run: () => T, mode: CommitMode): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ run, mode, resolve, reject });
      this.scheduleFlush(mode !== 'deferred');
    });
  }

  private scheduleFlush(soon: boolean): void {
    if (this.flushImmediate) return;
    if (soon) this.flushImmediate = setImmediate(() => this.flushGroup());
    else this.flushTimer ??= setTimeout(() => this.flushGroup(), DEFER_MS);
  }

  private flushGroup(): void {
    if (this.flushImmediate) clearImmediate(this.flushImmediate);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushImmediate = undefined;
    this.flushTimer = undefined;
    const group = this.pending;
    this.pending = [];
    if (group.length === 0 || !this.db.open) {
      for (const p of group) p.reject(new Error('the store is closed'));
      return;
    }
    let results: ({ ok: true; value: unknown } | { ok: false; error: unknown })[];
    // In WAL mode a FULL commit's fsync also covers every NORMAL commit before it.
    const durable = group.some((p) => p.mode === 'durable');
    try {
      if (durable) this.syncFull.run();
      results = this.runGroup(group);
      this.commitFailing = undefined;
    } catch (error) {
      // The commit itself failed (disk full, read-only file): nothing of the group is stored.
      this.commitFailing = error;
      for (const p of group) p.reject(error);
      return;
    } finally {
      if (durable && this.db.open) this.syncNormal.run();
    }
    group.forEach((p, i) => {
      const r = results[i]!;
      if (r.ok) p.resolve(r.value);
      else {
        // A lock held elsewhere or a full disk may fail each item rather than the commit.
        if (isStoreFailure(r.error)) this.commitFailing = r.error;
        p.reject(r.error);
      }
    });
  }

  private applyWrite(write: IngestWrite): IngestOutcome {
    const outcome: IngestOutcome = { inserted: 0, duplicates: 0, deliveries: 0 };
    for (const e of write.events) {
      const row = this.stmts.insertEvent.get(
        e.sourceId,
        e.messageId,
        e.type,
        e.userId ?? null,
        e.anonymousId ?? null,
        e.event ?? null,
        e.receivedAtMs,
        e.json,
      );
      if (row === undefined) {
        outcome.duplicates++;
        continue;
      }
      outcome.inserted++;
      for (const d of e.deliveries) {
        this.stmts.insertDelivery.run(d.destinationId, e.sourceId, row.id, d.kind, e.messageId, e.userId ?? null, d.body, e.receivedAtMs, e.receivedAtMs);
        outcome.deliveries++;
      }
    }
    if (write.rejections.length > 0) {
      const now = write.receivedAtMs;
      for (const r of write.rejections) {
        this.stmts.insertRejection.run(r.sourceId, r.index, r.code, r.message, now);
        this.stmts.countRejection.run(r.sourceId, r.code);
      }
      this.stmts.pruneRejections.run();
    }
    return outcome;
  }

  async nextDueAt(destinationIds: string[]): Promise<number | null> {
    let due: number | null = null;
    for (const id of destinationIds) {
      // One seek in the deliveries_due index per destination (MIN over `IN (...)` would walk
      // every pending row). A held job is due when its lease runs out (it was due when claimed),
      // so the scan goes on past held jobs to the first free one.
      for (const row of this.stmts.dueTimes.all(id, (this.leasesByDestination.get(id)?.size ?? 0) + 1)) {
        const lease = this.leases.get(row.id);
        const at = lease === undefined ? row.due : lease.untilMs;
        if (due === null || at < due) due = at;
        if (lease === undefined) break;
      }
    }
    return due;
  }

  /**
   * Leases live in memory, not in the file: one process owns a SQLite store (see
   * docs/operations.md), so no other worker needs to see them, and a claim writes nothing. It
   * reads due jobs from the deliveries_due index, on from the last job claimed, or from the
   * start skipping those held under a live lease (see below for when). After a crash every
   * held job is due again at once: there is no lease in the file to wait out.
   */
  claim(args: { destinationId: string; owner: string; nowMs: number; leaseMs: number; limit: number }): Promise<ClaimedDelivery[]> {
    if (!this.db.open) return Promise.reject(new Error('the store is closed'));
    const { destinationId, owner, nowMs, leaseMs, limit } = args;
    // A claim only reads, and reads go on while writes fail (a full disk, a lock held by a
    // backup). Sending jobs whose outcomes cannot be recorded would send each again when its
    // lease runs out, so after a failed record claims stop until a test write commits.
    if (this.recordsFailing !== undefined) {
      if (nowMs < this.nextProbeAtMs) return Promise.reject(this.recordsFailing);
      this.nextProbeAtMs = nowMs + PROBE_INTERVAL_MS;
      try {
        // Without waiting for a lock: a held lock is as good an answer as any.
        this.db.pragma('busy_timeout = 0');
        this.stmts.probeWrite.run(nowMs);
        this.recordsFailing = undefined;
      } catch (error) {
        this.recordsFailing = error;
        return Promise.reject(error);
      } finally {
        this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      }
    }
    if (nowMs >= this.nextSweepAtMs) this.sweepLeases(nowMs, leaseMs);
    const held = this.heldBy(destinationId);
    let cursor = this.claimCursors.get(destinationId);
    if (held.size === 0) cursor = undefined;
    let rows: DueClaimTuple[] | undefined;
    try {
      // In a backlog the jobs held are the first due, and skipping them cost each claim as much
      // as the jobs it took. So most claims read on after the last job claimed; one in
      // FULL_READ_EVERY, and any that finds fewer than it asked for, reads from the start,
      // skipping the jobs held, to find those before that point that are free again (a lease
      // that ran out, a job handed back).
      if (cursor && cursor.after < FULL_READ_EVERY - 1) {
        const after = this.stmts.claimAfter.all({ destination: destinationId, now: nowMs, due: cursor.due, id: cursor.id, limit });
        if (after.length === limit) {
          rows = after;
          cursor.after++;
        }
      }
      if (!rows) {
        const live: number[] = [];
        for (const [id, lease] of held) if (lease.untilMs > nowMs) live.push(id);
        rows = this.stmts.claimFree.all(destinationId, nowMs, live.length > 0 ? JSON.stringify(live) : '[]', limit);
        if (cursor) cursor.after = 0;
      }
    } catch (error) {
      return Promise.reject(error);
    }
    const until = nowMs + leaseMs;
    for (const row of rows) this.hold(row[0], { owner, destinationId, createdAtMs: row[9], untilMs: until, sweepAtMs: until + leaseMs });
    // The last in due order. SQLite returns a UNION ALL's parts in turn, which the LIMIT relies
    // on; were that ever not so, a claim could take later jobs before the rest of the cursor's
    // due time, and those would wait for the next read from the start: the cursor must still
    // be the furthest job claimed.
    let last: DueClaimTuple | undefined;
    for (const row of rows) if (!last || laterInLine(row, last[11], last[0])) last = row;
    if (last && (!cursor || laterInLine(last, cursor.due, cursor.id)))
      this.claimCursors.set(destinationId, (cursor = { due: last[11], id: last[0], after: cursor?.after ?? 0 }));
    else if (!cursor) this.claimCursors.delete(destinationId);
    return Promise.resolve(rows.map(toClaimed));
  }

  complete(args: Completion): Promise<boolean> {
    return this.completions.add(args);
  }

  private heldBy(destinationId: string): Map<number, Lease> {
    let held = this.leasesByDestination.get(destinationId);
    if (!held) this.leasesByDestination.set(destinationId, (held = new Map()));
    return held;
  }

  private hold(id: number, lease: Lease): void {
    this.unhold(id);
    this.leases.set(id, lease);
    this.heldBy(lease.destinationId).set(id, lease);
  }

  /** Lets a job go, if it is held. */
  private unhold(id: number): void {
    const lease = this.leases.get(id);
    if (lease === undefined) return;
    this.leases.delete(id);
    this.leasesByDestination.get(lease.destinationId)?.delete(id);
  }

  /**
   * Drops leases that ran out a whole lease period ago: their jobs were handed back, finished
   * by another path (a deleted destination, a deletion request) or never started, and nothing
   * else would ever drop them. A lease that has merely run out stays, so that its worker's late
   * outcome still counts as long as no one else has taken the job.
   */
  private sweepLeases(nowMs: number, leaseMs: number): void {
    this.nextSweepAtMs = nowMs + leaseMs;
    for (const [id, lease] of this.leases) if (lease.sweepAtMs <= nowMs) this.unhold(id);
  }

  private completeOne(args: Completion): boolean {
    const lease = this.leases.get(args.id);
    let kept = false;
    // Another worker may have taken the job after this lease ran out: its outcome counts, not this one.
    if (lease !== undefined && holds(lease, args)) {
      const base = { id: args.id, nowMs: args.nowMs, firstAttemptAtMs: args.firstAttemptAtMs };
      const o = args.outcome;
      const result =
        o.status === 'succeeded'
          ? this.stmts.completeSucceeded.run(args.firstAttemptAtMs, args.nowMs, args.id)
          : o.status === 'pending'
            ? this.stmts.completeRetry.run({ ...base, nextAttemptAtMs: o.nextAttemptAtMs, lastError: storedText(o.lastError) })
            : this.stmts.completeDead.run({ ...base, reason: o.reason, lastError: storedText(o.lastError) });
      kept = result.changes === 1;
      if (kept && o.status === 'succeeded' && args.kind === 'delete') {
        // A notice delivered has done its work; kept, it would name the user it was about.
        this.deleteDeliveries([args.id]);
        this.noticesForgotten = true;
        return kept;
      }
    }
    // A lost lease still logs what was sent; a delivery purged meanwhile (a deletion
    // request) keeps nothing, since a response body may echo the user's data.
    if (kept || this.stmts.deliveryExists.get(args.id, args.createdAtMs ?? null, args.createdAtMs ?? null) !== undefined)
      for (const a of args.attempts)
        this.stmts.insertAttempt.run(args.id, storedText(a.url), a.startedAtMs, a.latencyMs, a.statusCode, a.errorClass, storedText(a.errorMessage), storedText(a.responseBody), a.trigger);
    return kept;
  }

  async releaseLeases(owner: string, _nowMs: number, leases?: readonly HeldLease[]): Promise<number> {
    // A held job kept its due time, which has passed: it is due again at once.
    let released = 0;
    if (leases === undefined) {
      for (const [id, lease] of this.leases)
        if (lease.owner === owner) {
          this.unhold(id);
          released++;
        }
      return released;
    }
    for (const { id, leasedUntilMs } of leases) {
      const lease = this.leases.get(id);
      // Its end names the lease: a later claim of the same job (after this one ran out) set another.
      if (lease?.owner !== owner || lease.untilMs !== leasedUntilMs) continue;
      this.unhold(id);
      // It lies before the claim cursor: the next claim reads from the start and finds it.
      this.claimCursors.delete(lease.destinationId);
      released++;
    }
    return released;
  }

  async abandonPending(destinationId: string, nowMs: number): Promise<number> {
    const abandoned = this.db
      .prepare(
        `UPDATE deliveries SET status = 'dead', dead_reason = 'destination_deleted', completed_at = ?, lease_owner = NULL,
           last_error = 'the destination was deleted'
         WHERE status = 'pending' AND destination_id = ?`,
      )
      .run(nowMs, destinationId).changes;
    // Its held jobs are dead now: an outcome still on its way is refused, and nothing is held.
    for (const id of this.leasesByDestination.get(destinationId)?.keys() ?? []) this.unhold(id);
    return abandoned;
  }

  async enqueue(deliveries: NewDelivery[], nowMs: number): Promise<void> {
    this.db.transaction(() => {
      for (const d of deliveries) this.insertLooseDelivery(d, nowMs);
    })();
  }

  /**
   * Queues deliveries inside the caller's open transaction on {@link database}, so they
   * commit or roll back together with the caller's own writes (an audience sync).
   *
   * @throws Error when no transaction is open: the caller's atomicity would silently be lost.
   */
  enqueueInTransaction(deliveries: readonly NewDelivery[], nowMs: number): void {
    if (!this.db.inTransaction) throw new Error('enqueueInTransaction needs an open transaction');
    for (const d of deliveries) this.insertLooseDelivery(d, nowMs);
  }

  private insertLooseDelivery(d: NewDelivery, nowMs: number): void {
    this.stmts.insertDelivery.run(d.destinationId, d.sourceId ?? null, null, d.kind, d.messageId ?? null, d.userId ?? null, d.body, nowMs, nowMs);
  }

  async listDeliveries(filter: DeliveryFilter): Promise<DeliveryView[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.status) (where.push('status = ?'), params.push(filter.status));
    if (filter.destinationId) (where.push('destination_id = ?'), params.push(filter.destinationId));
    if (filter.sourceId) (where.push('source_id = ?'), params.push(filter.sourceId));
    if (filter.messageId) (where.push('message_id = ?'), params.push(filter.messageId));
    if (filter.afterId !== undefined) (where.push('id > ?'), params.push(filter.afterId));
    const sql = `SELECT * FROM deliveries ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id LIMIT ?`;
    const rows = this.db.prepare(sql).all(...params, filter.limit) as DeliveryRow[];
    return rows.map((row) => this.view(row));
  }

  /** A delivery as the admin API shows it: while held, due again when its lease runs out. */
  private view(row: DeliveryRow): DeliveryView {
    const lease = this.leases.get(row.id);
    return toDeliveryView(lease === undefined ? row : { ...row, next_attempt_at: lease.untilMs });
  }

  async getDelivery(id: number): Promise<{ delivery: DeliveryView; body: string; attempts: AttemptView[] } | null> {
    const row = this.db.prepare(`SELECT * FROM deliveries WHERE id = ?`).get(id) as (DeliveryRow & { body: string }) | undefined;
    if (!row) return null;
    const attempts = this.db
      .prepare(`SELECT * FROM attempts WHERE delivery_id = ? ORDER BY id`)
      .all(id) as AttemptRow[];
    return {
      delivery: this.view(row),
      body: row.body,
      attempts: attempts.map(toAttemptView),
    };
  }

  async replay(filter: ReplayFilter, nowMs: number): Promise<number> {
    const where = [`status = 'dead'`];
    const params: unknown[] = [nowMs];
    if (filter.ids) {
      if (filter.ids.length === 0) return 0;
      where.push(`id IN (${filter.ids.map(() => '?').join(',')})`);
      params.push(...filter.ids);
    }
    if (filter.destinationId) (where.push('destination_id = ?'), params.push(filter.destinationId));
    if (filter.sinceMs !== undefined) (where.push('completed_at >= ?'), params.push(filter.sinceMs));
    if (filter.destinationIdsIn) {
      if (filter.destinationIdsIn.length === 0) return 0;
      where.push(`destination_id IN (${filter.destinationIdsIn.map(() => '?').join(',')})`);
      params.push(...filter.destinationIdsIn);
    }
    // A replay opens a fresh retry window: the old one has run out by definition.
    const replayed = this.db
      .prepare<unknown[], number>(
        `UPDATE deliveries SET status = 'pending', trigger = 'manual', next_attempt_at = ?, first_attempt_at = NULL, attempt_count = 0,
           completed_at = NULL, dead_reason = NULL, lease_owner = NULL
         WHERE ${where.join(' AND ')} RETURNING id`,
      )
      .pluck()
      .all(...params);
    // A dead job may still be held by a worker whose outcome is on its way (a destination
    // deleted mid-attempt): that outcome belongs to the old window, not to the replayed job.
    for (const id of replayed) this.unhold(id);
    return replayed.length;
  }

  async listRejections(args: { sourceId?: string; limit: number }) {
    const rows = (
      args.sourceId
        ? this.db.prepare(`SELECT * FROM rejections WHERE source_id = ? ORDER BY id DESC LIMIT ?`).all(args.sourceId, args.limit)
        : this.db.prepare(`SELECT * FROM rejections ORDER BY id DESC LIMIT ?`).all(args.limit)
    ) as { source_id: string; batch_index: number; code: string; message: string; received_at: number }[];
    return rows.map((r) => ({
      sourceId: r.source_id,
      index: r.batch_index,
      code: r.code,
      message: r.message,
      receivedAt: iso(r.received_at)!,
    }));
  }

  async rejectionCounts() {
    const rows = this.db.prepare(`SELECT source_id, code, count FROM rejection_counts ORDER BY source_id, code`).all() as {
      source_id: string;
      code: string;
      count: number;
    }[];
    return rows.map((r) => ({ sourceId: r.source_id, code: r.code, count: r.count }));
  }

  async stats(): Promise<StoreStats> {
    const deliveries: StoreStats['deliveries'] = { pending: 0, succeeded: 0, dead: 0 };
    for (const r of this.db.prepare(`SELECT status, COUNT(*) AS n FROM deliveries GROUP BY status`).all() as {
      status: keyof StoreStats['deliveries'];
      n: number;
    }[])
      deliveries[r.status] = r.n;
    const events = (this.db.prepare(`SELECT COUNT(*) AS n FROM events`).get() as { n: number }).n;
    const rejections = (this.db.prepare(`SELECT COALESCE(SUM(count), 0) AS n FROM rejection_counts`).get() as { n: number }).n;
    return { events, deliveries, rejections };
  }

  async createRegulation(args: { id: string; userIds: string[]; sourceIds: string[] | null; nowMs: number }): Promise<Regulation> {
    this.db
      .prepare(`INSERT INTO regulations (id, user_ids, user_count, source_ids, status, created_at) VALUES (?, ?, ?, ?, 'pending', ?)`)
      .run(args.id, JSON.stringify(args.userIds), args.userIds.length, args.sourceIds === null ? null : JSON.stringify(args.sourceIds), args.nowMs);
    return (await this.getRegulation(args.id))!;
  }

  async getRegulation(id: string): Promise<Regulation | null> {
    const row = this.db.prepare(`SELECT * FROM regulations WHERE id = ?`).get(id) as RegulationRow | undefined;
    return row ? toRegulation(row) : null;
  }

  async pendingRegulations(): Promise<Regulation[]> {
    const rows = this.db.prepare(`SELECT * FROM regulations WHERE status = 'pending' ORDER BY created_at`).all() as RegulationRow[];
    return rows.map(toRegulation);
  }

  async executeRegulation(args: {
    id: string;
    nowMs: number;
    noticesFor: (affected: AffectedSources) => DeleteNotice[];
    batchSize?: number;
  }): Promise<Regulation> {
    const plan = this.db.transaction(() => this.planOf(args.id))();
    if (plan !== undefined) {
      const limit = args.batchSize ?? defaultPurgeBatchSize;
      for (const [column, ids] of [['user_id', plan.plan.userIds], ['anonymous_id', plan.plan.anonymousIds]] as const)
        for (const id of ids)
          for (let after = 0; after >= 0; ) {
            after = this.db.transaction(() => this.purgeBatch(args.id, plan, column, id, after, limit))();
            // Each batch commits on its own, and ingestion and delivery run between two.
            if (after >= 0) await nextTurn();
          }
      this.db.transaction(() => this.finishRegulation(args.id, plan.plan, args.noticesFor(plan.plan.affected), args.nowMs))();
    }
    return (await this.getRegulation(args.id))!;
  }

  /** The stored plan of a pending regulation, made and stored first if it has none. */
  private planOf(id: string): { plan: RegulationPlan; scope: string | null } | undefined {
    const row = this.db.prepare(`SELECT * FROM regulations WHERE id = ?`).get(id) as RegulationRow | undefined;
    if (!row || row.status !== 'pending') return undefined;
    if (row.plan !== null) return { plan: JSON.parse(row.plan) as RegulationPlan, scope: row.source_ids };
    const scope = row.source_ids === null ? '' : `AND source_id IN (SELECT value FROM json_each(@scope))`;
    const links = new LinkedIdentities(JSON.parse(row.user_ids) as string[]);
    const aliases = this.db
      .prepare<{ ids: string }, [string, string]>(
        `SELECT json_extract(json, '$.previousId'), user_id FROM events
         WHERE type = 'alias' AND user_id IN (SELECT value FROM json_each(@ids))
         UNION
         SELECT json_extract(json, '$.previousId'), user_id FROM events
         WHERE type = 'alias' AND json_extract(json, '$.previousId') IN (SELECT value FROM json_each(@ids))`,
      )
      .raw();
    for (let ids = links.unexplored(); ids.length > 0; ids = links.unexplored()) links.addAliases(aliases.all({ ids: JSON.stringify(ids) }));
    const userIds = JSON.stringify(links.userIds());
    links.addAnonymous(
      this.db
        .prepare<[string], [string, string]>(
          `SELECT DISTINCT user_id, anonymous_id FROM events WHERE user_id IN (SELECT value FROM json_each(?)) AND anonymous_id IS NOT NULL`,
        )
        .raw()
        .all(userIds),
    );
    const maxEventId = (this.db.prepare(`SELECT COALESCE(MAX(id), 0) FROM events`).pluck().get() as number);
    const params = { ids: userIds, anonymous: JSON.stringify(links.anonymousIds()), max: maxEventId, ...(row.source_ids === null ? {} : { scope: row.source_ids }) };
    const byUser = this.db
      .prepare<typeof params, [string, string]>(
        `SELECT DISTINCT source_id, user_id FROM events WHERE user_id IN (SELECT value FROM json_each(@ids)) AND id <= @max ${scope}`,
      )
      .raw()
      .all(params);
    const byAnonymous = this.db
      .prepare<typeof params, [string, string]>(
        `SELECT DISTINCT source_id, anonymous_id FROM events
         WHERE anonymous_id IN (SELECT value FROM json_each(@anonymous)) AND anonymous_id IS NOT NULL AND user_id IS NULL AND id <= @max ${scope}`,
      )
      .raw()
      .all(params);
    const plan = links.plan(maxEventId, byUser, byAnonymous);
    this.db.prepare(`UPDATE regulations SET plan = ? WHERE id = ?`).run(JSON.stringify(plan), id);
    return { plan, scope: row.source_ids };
  }

  /**
   * Deletes up to `limit` events of one identity (a user id, or an anonymous id on events
   * without one) after event id `after`, with their deliveries and attempts, and counts them
   * on the request. Returns the last event id deleted, or -1 when none was left.
   */
  private purgeBatch(
    id: string,
    { plan, scope }: { plan: RegulationPlan; scope: string | null },
    column: 'user_id' | 'anonymous_id',
    identity: string,
    after: number,
    limit: number,
  ): number {
    const only = column === 'anonymous_id' ? 'AND user_id IS NULL' : '';
    const inScope = scope === null ? '' : `AND source_id IN (SELECT value FROM json_each(@scope))`;
    const events = this.db
      .prepare<Record<string, unknown>, number>(
        `SELECT id FROM events WHERE ${column} = @identity ${only} AND id > @after AND id <= @max ${inScope} ORDER BY id LIMIT @limit`,
      )
      .pluck()
      .all({ identity, after, max: plan.maxEventId, limit, ...(scope === null ? {} : { scope }) });
    if (events.length === 0) return -1;
    const eventIds = JSON.stringify(events);
    const deliveries = this.db
      .prepare<[string], number>(`SELECT id FROM deliveries WHERE event_id IN (SELECT value FROM json_each(?))`)
      .pluck()
      .all(eventIds);
    this.deleteDeliveries(deliveries);
    this.db.prepare(`DELETE FROM events WHERE id IN (SELECT value FROM json_each(?))`).run(eventIds);
    this.db
      .prepare(`UPDATE regulations SET events_deleted = events_deleted + ?, deliveries_deleted = deliveries_deleted + ? WHERE id = ?`)
      .run(events.length, deliveries.length, id);
    return events.at(-1)!;
  }

  /** Deletes deliveries and their attempts; a job held by a worker is free of its lease (its outcome lands nowhere). */
  private deleteDeliveries(ids: readonly number[]): void {
    if (ids.length === 0) return;
    const list = JSON.stringify(ids);
    this.db.prepare(`DELETE FROM attempts WHERE delivery_id IN (SELECT value FROM json_each(?))`).run(list);
    this.db.prepare(`DELETE FROM deliveries WHERE id IN (SELECT value FROM json_each(?))`).run(list);
    // A notice queued later may take one of their ids.
    for (const delivery of ids) this.unhold(delivery);
  }

  /**
   * The last step, in one transaction: the audience deliveries and memberships of the user ids
   * left with no event, the notices, the request marked done with its user ids forgotten.
   */
  private finishRegulation(id: string, plan: RegulationPlan, notices: readonly DeleteNotice[], nowMs: number): void {
    const row = this.db.prepare(`SELECT status FROM regulations WHERE id = ?`).get(id) as { status: string } | undefined;
    if (row?.status !== 'pending') return;
    const gone = JSON.stringify(
      this.db
        .prepare<[string], string>(`SELECT value FROM json_each(?) WHERE NOT EXISTS (SELECT 1 FROM events WHERE user_id = value)`)
        .pluck()
        .all(JSON.stringify(plan.userIds)),
    );
    const audience = this.db
      .prepare<[string], number>(`SELECT id FROM deliveries WHERE kind = 'audience' AND user_id IN (SELECT value FROM json_each(?))`)
      .pluck()
      .all(gone);
    this.deleteDeliveries(audience);
    this.db
      .prepare(`DELETE FROM audience_members WHERE audience_id IN (SELECT id FROM audiences) AND user_id IN (SELECT value FROM json_each(?))`)
      .run(gone);
    for (const n of notices)
      this.insertLooseDelivery({ destinationId: n.destinationId, sourceId: n.sourceId, kind: 'delete', userId: n.userId, body: n.body }, nowMs);
    this.db
      .prepare(
        `UPDATE regulations SET status = 'done', finished_at = ?, deliveries_deleted = deliveries_deleted + ?, notifications_queued = ?,
           user_ids = '[]', plan = NULL
         WHERE id = ?`,
      )
      .run(nowMs, audience.length, notices.length, id);
  }

  async reclaimDeleted(): Promise<void> {
    this.truncateWal();
  }

  /**
   * Truncates the WAL after delivered notices were deleted, so that no byte of the user is
   * left once every notice is through. Notices are rare, so the checkpoint is too. A reader
   * elsewhere may keep it from finishing: it is then tried again after the next completions.
   */
  private forgetNoticesInWal(): void {
    try {
      this.truncateWal();
      this.noticesForgotten = false;
    } catch {
      // Still set: the next group of completions tries again.
    }
  }

  /**
   * Copies the WAL into the database file and truncates it to nothing: frames written before
   * a delete still hold the rows as they were, and a checkpoint alone leaves them in the file
   * until they are written over.
   *
   * @throws Error when a reader elsewhere (a backup, a `sqlite3` session) kept it from finishing.
   */
  private truncateWal(): void {
    const [result] = this.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
    if (result?.busy !== 0) throw new Error('the WAL could not be truncated: another connection is reading the database');
  }

  async loadCatalog(): Promise<{ sources: SourceConfig[]; destinations: DestinationConfig[] }> {
    const parse = <T>(rows: unknown[]): T[] => (rows as { config: string }[]).map((r) => JSON.parse(r.config) as T);
    return {
      sources: parse<SourceConfig>(this.db.prepare(`SELECT config FROM sources ORDER BY id`).all()),
      destinations: parse<DestinationConfig>(this.db.prepare(`SELECT config FROM destinations ORDER BY id`).all()),
    };
  }

  async saveSource(source: SourceConfig): Promise<void> {
    this.db
      .prepare(`INSERT INTO sources (id, config) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET config = excluded.config`)
      .run(source.id, JSON.stringify(source));
  }

  async deleteSource(id: string): Promise<void> {
    this.db.prepare(`DELETE FROM sources WHERE id = ?`).run(id);
  }

  async saveDestination(destination: DestinationConfig): Promise<void> {
    this.db
      .prepare(`INSERT INTO destinations (id, config) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET config = excluded.config`)
      .run(destination.id, JSON.stringify(destination));
  }

  async deleteDestination(id: string): Promise<void> {
    this.db.prepare(`DELETE FROM destinations WHERE id = ?`).run(id);
  }

  async getSetting(key: string): Promise<string | null> {
    const row = this.db.prepare(`SELECT value FROM settings WHERE key = ?`).get(key) as { value: string } | undefined;
    return row?.value ?? null;
  }

  async setSetting(key: string, value: string): Promise<void> {
    this.db
      .prepare(`INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`)
      .run(key, value);
  }

  /** Runs a synchronous function inside one transaction; for modules that own extra tables (audiences). */
  get database(): Database.Database {
    return this.db;
  }

  /**
   * Reads succeed on a full disk, so readiness follows writes: while the last commit (or the
   * last record of outcomes) failed, a test write decides, and its success clears the failure.
   */
  async checkReady(): Promise<void> {
    if (!this.db.open) throw new Error('the store is closed');
    if (this.commitFailing === undefined && this.recordsFailing === undefined) return;
    try {
      // Without waiting for a lock: the probe must answer at once.
      this.db.pragma('busy_timeout = 0');
      this.stmts.probeWrite.run(Date.now());
      this.commitFailing = undefined;
      this.recordsFailing = undefined;
    } finally {
      this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }

  async close(): Promise<void> {
    // Completions already handed in still commit: their jobs were sent.
    if (this.db.open) await this.completions.drained();
    // Writes queued in this very turn still commit: their callers are waiting for an answer.
    if (this.pending.length > 0) this.flushGroup();
    try {
      this.db.close();
    } finally {
      this.ownership?.close();
    }
  }
}
