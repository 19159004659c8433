/**
 * Admin tokens made through the admin API (their values' SHA-256 only) and the audit log of
 * changes through the admin API. Numbers 5 and 7 belong to other work of the same release.
 */
export const sql = `
CREATE TABLE admin_tokens (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  scope TEXT NOT NULL,
  token_sha256 TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  last_used_at INTEGER,
  revoked_at INTEGER
);

CREATE TABLE audit_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  token_id TEXT NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  action TEXT NOT NULL,
  object_kind TEXT,
  object_id TEXT,
  status INTEGER NOT NULL,
  error TEXT,
  before TEXT,
  after TEXT
);
`;
