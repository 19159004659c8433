import type Database from 'better-sqlite3';
import type { NewDelivery } from '../delivery-queue.js';
import type { LeaseTable } from './lease-table.js';
import { SqliteBacklogCounts } from './sqlite-backlog-counts.js';
import { SqliteStoreTotals } from './sqlite-store-totals.js';

/**
 * Writes of `deliveries` rows that several roles share: ingestion and every queue of loose
 * jobs (notices, audience identifies) insert them; a purge and a delivered notice delete them.
 * Every method runs inside the caller's transaction, and keeps the backlog's counts
 * ({@link counts}), which the other writers of a row's state keep too.
 */
export class SqliteDeliveryRows {
  /** Pending jobs and dead letters per destination, as every write of a row's state leaves them. */
  readonly counts: SqliteBacklogCounts;
  /** Events stored and deliveries that succeeded, store-wide: kept by every writer of those rows. */
  readonly totals: SqliteStoreTotals;
  private readonly insertSql: Database.Statement<[string, string | null, number | null, string, string | null, string | null, string, number, number]>;
  /** Inserts of the batch under way ({@link batch}): per destination, how many and the least id. */
  private inserted: Map<string, { n: number; least: number }> | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly leases: LeaseTable,
  ) {
    this.totals = new SqliteStoreTotals(db);
    this.counts = new SqliteBacklogCounts(db, this.totals);
    this.insertSql = db.prepare(
      `INSERT INTO deliveries (destination_id, source_id, event_id, kind, message_id, user_id, body, created_at, next_attempt_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  /**
   * A delivery row, due at once: destination, source, event, kind, message, user, body,
   * created and due. Counted at once, or inside {@link batch} once for the batch.
   */
  insert(
    destinationId: string,
    sourceId: string | null,
    eventId: number | null,
    kind: string,
    messageId: string | null,
    userId: string | null,
    body: string,
    createdAtMs: number,
    dueAtMs: number,
  ): void {
    const id = Number(this.insertSql.run(destinationId, sourceId, eventId, kind, messageId, userId, body, createdAtMs, dueAtMs).lastInsertRowid);
    if (this.inserted === undefined) return this.countInsert(destinationId, 1, id);
    const e = this.inserted.get(destinationId);
    if (e === undefined) this.inserted.set(destinationId, { n: 1, least: id });
    else {
      e.n += 1;
      if (id < e.least) e.least = id;
    }
  }

  /**
   * Runs `write`, counting the rows it inserts once per destination when it returns; if it
   * throws, its savepoint is rolled back and nothing is counted.
   */
  batch<T>(write: () => T): T {
    if (this.inserted !== undefined) return write();
    const inserted = (this.inserted = new Map<string, { n: number; least: number }>());
    try {
      const result = write();
      for (const [destinationId, e] of inserted) this.countInsert(destinationId, e.n, e.least);
      return result;
    } finally {
      this.inserted = undefined;
    }
  }

  /** A delivery that is not tied to a stored event (a deletion notice, an audience identify). */
  insertLoose(d: NewDelivery, nowMs: number): void {
    this.insert(d.destinationId, d.sourceId ?? null, null, d.kind, d.messageId ?? null, d.userId ?? null, d.body, nowMs, nowMs);
  }

  /** Deletes deliveries and their attempts; a job held by a worker is free of its lease (its outcome lands nowhere). */
  delete(ids: readonly number[]): void {
    if (ids.length === 0) return;
    const list = JSON.stringify(ids);
    this.db.prepare(`DELETE FROM attempts WHERE delivery_id IN (SELECT value FROM json_each(?))`).run(list);
    this.counts.removeRows(
      this.db.prepare(`DELETE FROM deliveries WHERE id IN (SELECT value FROM json_each(?)) RETURNING destination_id, status`).all(list) as {
        destination_id: string;
        status: string;
      }[],
    );
    // A notice queued later may take one of their ids.
    for (const delivery of ids) this.leases.unhold(delivery);
  }

  private countInsert(destinationId: string, n: number, leastId: number): void {
    this.counts.adjust(destinationId, n, 0);
    this.counts.lowerOldestBound(destinationId, leastId);
  }
}
