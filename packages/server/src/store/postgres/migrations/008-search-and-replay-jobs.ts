/**
 * As SQLite's migration 5: an index for each filter of a delivery search that had none
 * (destination, source, the deletion notices and audience changes by kind, the delivery of an
 * event by `event_id`; on events: the call type and the received-at time), regulations
 * listed newest first, and `replay_jobs`. `user_id` and `message_id` of deliveries, and
 * `anonymous_id` and a track call's `event` of events, had theirs.
 *
 * None of these columns changes when an outcome is recorded, so the completion's update
 * stays HOT (migration 4). Building them makes ingestion wait (a SHARE lock on events and
 * deliveries) for as long as it takes to read both tables once: see docs/operations.md.
 */
export const sql = `
CREATE INDEX deliveries_destination ON deliveries (destination_id, id);
CREATE INDEX deliveries_source ON deliveries (source_id, id) WHERE source_id IS NOT NULL;
CREATE INDEX deliveries_event ON deliveries (event_id) WHERE event_id IS NOT NULL;
CREATE INDEX deliveries_not_event ON deliveries (kind, id) WHERE kind <> 'event';
CREATE INDEX events_type ON events (type, received_at);
CREATE INDEX events_received ON events (received_at);
CREATE INDEX regulations_created ON regulations (created_at, id);

CREATE TABLE replay_jobs (
  id TEXT PRIMARY KEY,
  filter TEXT NOT NULL,
  status TEXT NOT NULL,
  total BIGINT NOT NULL,
  replayed BIGINT NOT NULL DEFAULT 0,
  cursor BIGINT NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  finished_at BIGINT,
  error TEXT
);
CREATE INDEX replay_jobs_created ON replay_jobs (created_at, id);
`;
