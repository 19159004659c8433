import type Database from 'better-sqlite3';
import type { DeliveryDetail, DeliveryFilter, DeliveryReads, DeliveryView } from '../delivery-reads.js';
import { errorClassPatterns, searchConditions } from '../delivery-search.js';
import { deliveryEventColumns, toAttemptView, toDeliveryView, type AttemptRow, type DeliveryRow } from '../rows.js';
import type { LeaseTable } from './lease-table.js';

/**
 * The statement of a delivery search and its parameters: a page in id order. The conditions
 * on the event find the events through their own index, then their deliveries through
 * `deliveries_event`. Exported for the test of its plans.
 */
export function searchQuery(filter: DeliveryFilter): { sql: string; params: unknown[] } {
  const { deliveries, events } = searchConditions(filter);
  const where = deliveries.map((c) => c.sql);
  const params = deliveries.map((c) => c.value);
  if (filter.status) {
    where.push('d.status = ?');
    params.push(filter.status);
  }
  if (filter.deadSinceMs !== undefined) {
    where.push('d.completed_at >= ?');
    params.push(filter.deadSinceMs);
  }
  if (filter.deadUntilMs !== undefined) {
    where.push('d.completed_at < ?');
    params.push(filter.deadUntilMs);
  }
  if (filter.errorClass !== undefined) {
    const patterns = errorClassPatterns(filter.errorClass);
    where.push(`(${patterns.map(() => `d.last_error LIKE ? ESCAPE '\\'`).join(' OR ')})`);
    params.push(...patterns);
  }
  if (events.length > 0) {
    where.push(`d.event_id IN (SELECT id FROM events WHERE ${events.map((c) => c.sql).join(' AND ')})`);
    params.push(...events.map((c) => c.value));
  }
  if (filter.afterId !== undefined) {
    where.push('d.id > ?');
    params.push(filter.afterId);
  }
  params.push(filter.limit);
  const sql = `SELECT d.id, d.destination_id, d.source_id, d.kind, d.status, d.message_id, d.user_id, d.attempt_count, d.created_at,
      d.first_attempt_at, d.next_attempt_at, d.completed_at, d.dead_reason, d.last_error, ${deliveryEventColumns}
    FROM deliveries d LEFT JOIN events e ON e.id = d.event_id
    ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY d.id LIMIT ?`;
  return { sql, params };
}

/** Deliveries as operators read them on SQLite, with the due times of held jobs from the lease table. */
export class SqliteDeliveryReads implements DeliveryReads {
  constructor(
    private readonly db: Database.Database,
    private readonly leases: LeaseTable,
  ) {}

  async listDeliveries(filter: DeliveryFilter): Promise<DeliveryView[]> {
    const { sql, params } = searchQuery(filter);
    const rows = this.db.prepare(sql).all(...params) as DeliveryRow[];
    return rows.map((row) => this.view(row));
  }

  async getDelivery(id: number): Promise<DeliveryDetail | null> {
    const row = this.db.prepare(`SELECT d.*, ${deliveryEventColumns} FROM deliveries d LEFT JOIN events e ON e.id = d.event_id WHERE d.id = ?`).get(id) as
      (DeliveryRow & { body: string }) | undefined;
    if (!row) return null;
    const attempts = this.db.prepare(`SELECT * FROM attempts WHERE delivery_id = ? ORDER BY id`).all(id) as AttemptRow[];
    return {
      delivery: this.view(row),
      body: row.body,
      attempts: attempts.map(toAttemptView),
    };
  }

  /** A delivery as the admin API shows it: while held, due again when its lease runs out. */
  private view(row: DeliveryRow): DeliveryView {
    const lease = this.leases.get(row.id);
    return toDeliveryView(lease === undefined ? row : { ...row, next_attempt_at: lease.untilMs });
  }
}
