/**
 * The totals of `GET /admin/v1/stats` (events stored, deliveries by status) kept as the tables
 * change, so that an answer reads a few rows rather than counting every event and delivery
 * (about 270 ms for a million events on a slow core). As for the backlog (migration 14), every
 * statement that inserts, updates or deletes such rows adds one row to `store_total_deltas`,
 * by a statement-level trigger over its transition tables; an update adds one only when it
 * moved deliveries between statuses (a retry changes none). Pending deliveries are not counted
 * here: they are the rows of `delivery_queue`, which migration 14 already counts, and every
 * delivery is inserted pending, so `deliveries` needs no insert trigger (none copies each new
 * delivery's body into a transition table). Nothing is updated in place, so
 * the nodes of a cluster never wait on one another for a counter row; the reader sums the
 * rows and folds them into one from time to time (pg-store-totals.ts). Both tables are locked
 * while the first counts are taken, so none of their changes falls between them and the
 * triggers. Number 16 belongs to other work of the same release.
 */
export const sql = `
LOCK TABLE events, deliveries IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE store_total_deltas (
  events BIGINT NOT NULL DEFAULT 0,
  succeeded BIGINT NOT NULL DEFAULT 0,
  dead BIGINT NOT NULL DEFAULT 0
);
INSERT INTO store_total_deltas (events, succeeded, dead)
  SELECT (SELECT COUNT(*) FROM events), COUNT(*) FILTER (WHERE status = 'succeeded'), COUNT(*) FILTER (WHERE status = 'dead')
  FROM deliveries;
CREATE FUNCTION ferry_events_added() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO store_total_deltas (events) SELECT COUNT(*) FROM added_rows HAVING COUNT(*) > 0;
  RETURN NULL;
END $$;
CREATE FUNCTION ferry_events_removed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO store_total_deltas (events) SELECT -COUNT(*) FROM removed_rows HAVING COUNT(*) > 0;
  RETURN NULL;
END $$;
CREATE FUNCTION ferry_deliveries_removed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO store_total_deltas (succeeded, dead)
    SELECT -COUNT(*) FILTER (WHERE status = 'succeeded'), -COUNT(*) FILTER (WHERE status = 'dead')
    FROM removed_rows HAVING COUNT(*) FILTER (WHERE status <> 'pending') > 0;
  RETURN NULL;
END $$;
CREATE FUNCTION ferry_deliveries_changed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO store_total_deltas (succeeded, dead)
    SELECT SUM(s), SUM(x) FROM (
      SELECT COUNT(*) FILTER (WHERE status = 'succeeded') AS s, COUNT(*) FILTER (WHERE status = 'dead') AS x FROM new_rows
      UNION ALL
      SELECT -COUNT(*) FILTER (WHERE status = 'succeeded'), -COUNT(*) FILTER (WHERE status = 'dead') FROM old_rows
    ) AS moved
    HAVING SUM(s) <> 0 OR SUM(x) <> 0;
  RETURN NULL;
END $$;
CREATE TRIGGER events_added AFTER INSERT ON events
  REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT EXECUTE FUNCTION ferry_events_added();
CREATE TRIGGER events_removed AFTER DELETE ON events
  REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION ferry_events_removed();
CREATE TRIGGER deliveries_removed AFTER DELETE ON deliveries
  REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION ferry_deliveries_removed();
CREATE TRIGGER deliveries_changed AFTER UPDATE ON deliveries
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ferry_deliveries_changed();
`;
