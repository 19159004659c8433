import type { AuditEntry, NewAuditEntry } from './audit-log.js';

/** A row of `audit_log` as both dialects read it; `before` and `after` are JSON text. */
export interface AuditRow {
  id: number;
  at: number;
  token_id: string;
  method: string;
  path: string;
  action: string;
  object_kind: string | null;
  object_id: string | null;
  status: number;
  error: string | null;
  before: string | null;
  after: string | null;
}

/** The columns an append writes, in the order of {@link auditValues}. */
export const auditInsertColumns = 'at, token_id, method, path, action, object_kind, object_id, status, error, before, after';

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));

/** The values of an entry in the order of {@link auditInsertColumns}. */
export function auditValues(entry: NewAuditEntry): unknown[] {
  return [
    entry.atMs,
    entry.tokenId,
    entry.method,
    entry.path,
    entry.action,
    entry.object?.kind ?? null,
    entry.object?.id ?? null,
    entry.status,
    entry.error,
    json(entry.before),
    json(entry.after),
  ];
}

export function toAuditEntry(row: AuditRow): AuditEntry {
  return {
    id: row.id,
    atMs: row.at,
    tokenId: row.token_id,
    method: row.method,
    path: row.path,
    action: row.action,
    object: row.object_kind !== null && row.object_id !== null ? { kind: row.object_kind, id: row.object_id } : null,
    status: row.status,
    error: row.error,
    before: row.before === null ? null : (JSON.parse(row.before) as unknown),
    after: row.after === null ? null : (JSON.parse(row.after) as unknown),
  };
}
