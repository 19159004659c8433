/**
 * Replay from the archive: a replay job says what it replays (`kind`: `dead_letters`, as every
 * job before, or `archive`, stored events sent again to one destination); an archive job walks
 * events in (received_at, id) order, so its cursor is a pair (`cursor_at` with `cursor`), and
 * it counts the events it passed over (`skipped`: the destination's filter dropped them, or
 * their user is being deleted). A job may now also be `cancelled`. `next_batch_at` paces a job
 * with a rate: no batch before it, whichever node runs the job.
 */
export const sql = `
ALTER TABLE replay_jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'dead_letters';
ALTER TABLE replay_jobs ADD COLUMN cursor_at INTEGER;
ALTER TABLE replay_jobs ADD COLUMN skipped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE replay_jobs ADD COLUMN next_batch_at INTEGER;
CREATE INDEX replay_jobs_running ON replay_jobs (status) WHERE status = 'running';
`;
