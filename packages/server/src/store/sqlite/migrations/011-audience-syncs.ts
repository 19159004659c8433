/**
 * Each audience's sync history: one row per sync (or per run of quiet syncs folded together),
 * its figures or its failure; the newest `syncHistoryLimit` rows per audience are kept
 * (store/audience-rows.ts).
 */
export const sql = `
CREATE TABLE audience_syncs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  audience_id TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
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
