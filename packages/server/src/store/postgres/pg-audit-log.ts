import type pg from 'pg';
import type { AuditEntry, AuditLog, NewAuditEntry } from '../audit-log.js';
import { auditInsertColumns, auditValues, toAuditEntry, type AuditRow } from '../audit-rows.js';

/** The audit log on PostgreSQL (`audit_log`), one for every node. */
export class PgAuditLog implements AuditLog {
  constructor(private readonly pool: pg.Pool) {}

  async append(entry: NewAuditEntry): Promise<void> {
    await this.pool.query(`INSERT INTO audit_log (${auditInsertColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, auditValues(entry));
  }

  async list(args: { beforeId?: number; limit: number }): Promise<AuditEntry[]> {
    const { rows } = await this.pool.query<AuditRow>(`SELECT * FROM audit_log WHERE id < $1 ORDER BY id DESC LIMIT $2`, [
      args.beforeId ?? Number.MAX_SAFE_INTEGER,
      args.limit,
    ]);
    return rows.map(toAuditEntry);
  }
}
