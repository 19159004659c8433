import type Database from 'better-sqlite3';
import type { NewDelivery } from '../delivery-queue.js';
import type { LeaseTable } from './lease-table.js';

/**
 * Writes of `deliveries` rows that several roles share: ingestion and every queue of loose
 * jobs (notices, audience identifies) insert them; a purge and a delivered notice delete them.
 * Every method runs inside the caller's transaction.
 */
export class SqliteDeliveryRows {
  /** A delivery row, due at once: destination, source, event, kind, message, user, body, created and due. */
  readonly insert: Database.Statement<[string, string | null, number | null, string, string | null, string | null, string, number, number]>;

  constructor(
    private readonly db: Database.Database,
    private readonly leases: LeaseTable,
  ) {
    this.insert = db.prepare(
      `INSERT INTO deliveries (destination_id, source_id, event_id, kind, message_id, user_id, body, created_at, next_attempt_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  /** A delivery that is not tied to a stored event (a deletion notice, an audience identify). */
  insertLoose(d: NewDelivery, nowMs: number): void {
    this.insert.run(d.destinationId, d.sourceId ?? null, null, d.kind, d.messageId ?? null, d.userId ?? null, d.body, nowMs, nowMs);
  }

  /** Deletes deliveries and their attempts; a job held by a worker is free of its lease (its outcome lands nowhere). */
  delete(ids: readonly number[]): void {
    if (ids.length === 0) return;
    const list = JSON.stringify(ids);
    this.db.prepare(`DELETE FROM attempts WHERE delivery_id IN (SELECT value FROM json_each(?))`).run(list);
    this.db.prepare(`DELETE FROM deliveries WHERE id IN (SELECT value FROM json_each(?))`).run(list);
    // A notice queued later may take one of their ids.
    for (const delivery of ids) this.leases.unhold(delivery);
  }
}
