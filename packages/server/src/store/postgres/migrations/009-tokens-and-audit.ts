/**
 * As SQLite's migration 6: admin tokens made through the admin API (their values' SHA-256
 * only) and the audit log of changes through the admin API. Numbers 8 and 10 belong to other
 * work of the same release.
 */
export const sql = `
CREATE TABLE admin_tokens (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  scope TEXT NOT NULL,
  token_sha256 TEXT NOT NULL UNIQUE,
  created_at BIGINT NOT NULL,
  last_used_at BIGINT,
  revoked_at BIGINT
);

CREATE TABLE audit_log (
  id BIGSERIAL PRIMARY KEY,
  at BIGINT NOT NULL,
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
