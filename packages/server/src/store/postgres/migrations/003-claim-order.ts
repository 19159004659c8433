/**
 * The due index in the claim's own order, ties broken by id. With only (destination_id,
 * next_attempt_at), jobs that share one due time (a replay, an audience sync, a burst
 * received in one millisecond) had to be sorted whole before a claim could take its first
 * few: the planner read the whole backlog and sorted it, for every claim.
 *
 * The table is locked first, for the whole migration: building the index and then dropping
 * the old one would raise the migration's lock midway, and a node still running the previous
 * version that reads and then writes `deliveries` (a deletion request) would deadlock with
 * it. Reads and writes of `deliveries` wait meanwhile; the index covers pending jobs only, so
 * that is brief unless a large backlog is waiting.
 */
export const sql = `
LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE;
DROP INDEX IF EXISTS deliveries_due;
CREATE INDEX deliveries_due ON deliveries (destination_id, next_attempt_at, id) WHERE status = 'pending';
`;
