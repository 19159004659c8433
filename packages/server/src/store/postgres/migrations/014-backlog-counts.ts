/**
 * Pending jobs per destination kept as the queue changes, so that a scrape reads a few rows
 * rather than a pass over `delivery_queue` (about 250 ms a million rows on a slow core):
 * every statement that inserts or deletes queue rows adds one row per destination to
 * `backlog_deltas`, by a statement-level trigger over its transition table (once per
 * statement, not per row). Nothing is updated in place, so the nodes of a cluster never wait
 * on one another for a counter row; the reader sums the rows and folds them into one per
 * destination from time to time (pg-backlog.ts). The queue is locked while the first counts
 * are taken, so none of its changes falls between them and the trigger.
 */
export const sql = `
LOCK TABLE delivery_queue IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE backlog_deltas (
  destination_id TEXT NOT NULL,
  pending BIGINT NOT NULL
);
INSERT INTO backlog_deltas (destination_id, pending) SELECT destination_id, COUNT(*) FROM delivery_queue GROUP BY destination_id;
CREATE FUNCTION ferry_queue_added() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO backlog_deltas (destination_id, pending) SELECT destination_id, COUNT(*) FROM added_rows GROUP BY destination_id;
  RETURN NULL;
END $$;
CREATE FUNCTION ferry_queue_removed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO backlog_deltas (destination_id, pending) SELECT destination_id, -COUNT(*) FROM removed_rows GROUP BY destination_id;
  RETURN NULL;
END $$;
CREATE TRIGGER delivery_queue_added AFTER INSERT ON delivery_queue
  REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT EXECUTE FUNCTION ferry_queue_added();
CREATE TRIGGER delivery_queue_removed AFTER DELETE ON delivery_queue
  REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION ferry_queue_removed();
`;
