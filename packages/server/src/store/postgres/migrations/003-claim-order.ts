/**
 * The due index in the claim's own order, ties broken by id. With only (destination_id,
 * next_attempt_at), jobs that share one due time (a replay, an audience sync, a burst
 * received in one millisecond) had to be sorted whole before a claim could take its first
 * few: the planner read the whole backlog and sorted it, for every claim. Built in the
 * migration's transaction, which holds writes to `deliveries` off while it runs; the index
 * covers pending jobs only, so that is brief unless a large backlog is waiting.
 */
export const sql = `
CREATE INDEX deliveries_due_in_order ON deliveries (destination_id, next_attempt_at, id) WHERE status = 'pending';
DROP INDEX deliveries_due;
ALTER INDEX deliveries_due_in_order RENAME TO deliveries_due;
`;
