import type Database from 'better-sqlite3';
import type { DeliveryDetail, DeliveryFilter, DeliveryReads, DeliveryView } from '../delivery-reads.js';
import { toAttemptView, toDeliveryView, type AttemptRow, type DeliveryRow } from '../rows.js';
import type { LeaseTable } from './lease-table.js';

/** Deliveries as operators read them on SQLite, with the due times of held jobs from the lease table. */
export class SqliteDeliveryReads implements DeliveryReads {
  constructor(
    private readonly db: Database.Database,
    private readonly leases: LeaseTable,
  ) {}

  async listDeliveries(filter: DeliveryFilter): Promise<DeliveryView[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.status) {
      where.push('status = ?');
      params.push(filter.status);
    }
    if (filter.destinationId) {
      where.push('destination_id = ?');
      params.push(filter.destinationId);
    }
    if (filter.sourceId) {
      where.push('source_id = ?');
      params.push(filter.sourceId);
    }
    if (filter.messageId) {
      where.push('message_id = ?');
      params.push(filter.messageId);
    }
    if (filter.afterId !== undefined) {
      where.push('id > ?');
      params.push(filter.afterId);
    }
    const sql = `SELECT * FROM deliveries ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id LIMIT ?`;
    const rows = this.db.prepare(sql).all(...params, filter.limit) as DeliveryRow[];
    return rows.map((row) => this.view(row));
  }

  async getDelivery(id: number): Promise<DeliveryDetail | null> {
    const row = this.db.prepare(`SELECT * FROM deliveries WHERE id = ?`).get(id) as (DeliveryRow & { body: string }) | undefined;
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
