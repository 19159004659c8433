/** What a change through the admin API acted on. */
export interface AuditObject {
  /** `source`, `destination`, `token`, `dead-letter`...: the route's collection, singular. */
  kind: string;
  id: string;
}

/** One change through the admin API, as the audit log keeps it. */
export interface NewAuditEntry {
  atMs: number;
  /** The id of the token that made it: `bootstrap` or a `tok_` id. */
  tokenId: string;
  method: string;
  /** The request's path, without its query. */
  path: string;
  /** `destination.update`, `token.create`...: see `admin/audit.ts`. */
  action: string;
  object: AuditObject | null;
  /** The HTTP status answered. */
  status: number;
  /** The error code answered when the change was refused or failed; null on success. */
  error: string | null;
  /** The object before the change, secrets masked; null when there was none or it is not known. */
  before: unknown;
  /** The object after the change, secrets masked; null when it is gone, or the change failed. */
  after: unknown;
}

/** A kept entry: what was appended, with its id (ascending in the order appended). */
export interface AuditEntry extends NewAuditEntry {
  id: number;
}

/**
 * The audit log of the admin API: appended after each change, read newest first. Entries are
 * deleted only by the retention's pruner, and by default kept forever (docs/operations.md, "The audit log").
 */
export interface AuditLog {
  append(entry: NewAuditEntry): Promise<void>;
  /** Entries newest first; with `beforeId`, only those older than it (the next page). */
  list(args: { beforeId?: number; limit: number }): Promise<AuditEntry[]>;
}
