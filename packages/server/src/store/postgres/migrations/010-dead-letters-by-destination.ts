/**
 * Dead letters per destination, counted for metrics (`ferry_dead_letters`) by an index-only
 * scan rather than from the rows. `dead_reason` is already in a partial index's predicate
 * (`deliveries_dead`, migration 4) and `destination_id` never changes, so the completion's
 * update of a delivery stays a HOT update.
 */
export const sql = `
CREATE INDEX deliveries_dead_destination ON deliveries (destination_id) WHERE dead_reason IS NOT NULL;
`;
