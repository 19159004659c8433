/**
 * Each audience's sync history, as SQLite's migration 11: one row per sync (or per run of
 * quiet syncs folded together), its figures or its failure; the newest `syncHistoryLimit`
 * rows per audience are kept (store/audience-rows.ts). Number 15 belongs to other work of the
 * same release.
 */
export const sql = `
CREATE TABLE audience_syncs (
  id BIGSERIAL PRIMARY KEY,
  audience_id TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  finished_at BIGINT NOT NULL,
  runs INTEGER NOT NULL DEFAULT 1,
  sync_count INTEGER,
  added INTEGER,
  removed INTEGER,
  changed INTEGER,
  forgotten INTEGER,
  queued INTEGER,
  member_count INTEGER,
  error TEXT
);
CREATE INDEX audience_syncs_by_audience ON audience_syncs (audience_id, id);
`;
