/**
 * Pending jobs move to a narrow queue table of their own, so that a delivery's row is written
 * twice in its life (when queued and when its outcome is recorded) and the second write is a
 * HOT update: one new row version on the same page, no index entry.
 *
 * Before, the claim and the completion each rewrote the wide delivery row (its body included)
 * and added an entry to each of its five indexes, since both changed columns that the due
 * index and the status index hold. Those two writes were most of what the database spent on a
 * delivery. Now:
 * - `delivery_queue` holds one row per pending delivery (and only those): its destination,
 *   when it is due, and the lease. The claim and the retry touch this row alone.
 * - No index of `deliveries` holds a column that recording an outcome changes: the status
 *   index is gone (a pending delivery is one with a queue row; a dead letter has a
 *   `dead_reason`, which the dead-letter index holds and which a success leaves NULL), and
 *   the lease lives in the queue.
 * - `deliveries` pages are filled to half, so that each row's recorded outcome fits beside it.
 *   The table takes about twice the space of a packed one; before, every write of a row put
 *   its new version elsewhere, so it grew to about three times until vacuumed.
 *
 * The table is locked for the whole migration, as in migration 3: nodes still running the
 * previous version wait rather than claim from the table being emptied of its role.
 */
export const sql = `
LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE;
CREATE TABLE delivery_queue (
  delivery_id BIGINT PRIMARY KEY,
  destination_id TEXT NOT NULL,
  next_attempt_at BIGINT NOT NULL,
  lease_owner TEXT
);
INSERT INTO delivery_queue (delivery_id, destination_id, next_attempt_at, lease_owner)
  SELECT id, destination_id, next_attempt_at, lease_owner FROM deliveries WHERE status = 'pending';
CREATE INDEX delivery_queue_due ON delivery_queue (destination_id, next_attempt_at, delivery_id);
DROP INDEX deliveries_due;
DROP INDEX deliveries_status;
CREATE INDEX deliveries_dead ON deliveries (id) WHERE dead_reason IS NOT NULL;
ALTER TABLE deliveries DROP COLUMN lease_owner;
ALTER TABLE deliveries SET (fillfactor = 50);
ANALYZE delivery_queue;
`;
