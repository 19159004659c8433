/** Replay from the archive, as SQLite's migration 9: a job's `kind`, the pair cursor's `cursor_at`, `skipped`, and the rate's `next_batch_at`. */
export const sql = `
ALTER TABLE replay_jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'dead_letters';
ALTER TABLE replay_jobs ADD COLUMN cursor_at BIGINT;
ALTER TABLE replay_jobs ADD COLUMN skipped BIGINT NOT NULL DEFAULT 0;
ALTER TABLE replay_jobs ADD COLUMN next_batch_at BIGINT;
CREATE INDEX replay_jobs_running ON replay_jobs (status) WHERE status = 'running';
`;
