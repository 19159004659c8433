import type Database from 'better-sqlite3';
import type { AuditEntry, AuditLog, NewAuditEntry } from '../audit-log.js';
import { auditInsertColumns, auditValues, toAuditEntry, type AuditRow } from '../audit-rows.js';

/** The audit log on SQLite (`audit_log`). */
export class SqliteAuditLog implements AuditLog {
  constructor(private readonly db: Database.Database) {}

  async append(entry: NewAuditEntry): Promise<void> {
    this.db.prepare(`INSERT INTO audit_log (${auditInsertColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(...auditValues(entry));
  }

  async list(args: { beforeId?: number; limit: number }): Promise<AuditEntry[]> {
    const rows = this.db
      .prepare(`SELECT * FROM audit_log WHERE id < ? ORDER BY id DESC LIMIT ?`)
      .all(args.beforeId ?? Number.MAX_SAFE_INTEGER, args.limit) as AuditRow[];
    return rows.map(toAuditEntry);
  }
}
