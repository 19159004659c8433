/**
 * What the admin API's searches and bulk replays need:
 * - an index for each filter of a delivery search that had none (destination, source,
 *   messageId, the deletion notices and audience changes by kind; on events: the call type and
 *   the received-at time, the call type with it). `user_id`, `anonymous_id` and a track
 *   call's `event` had theirs (migrations 1 and 3), and `deliveries_event` leads from an
 *   event to its deliveries. Each is in id order within its key, the order of a listing, so
 *   that a page is read from the index without sorting everything the filter matches.
 * - regulations listed newest first;
 * - `replay_jobs`: bulk replays run in batches, with their progress (`cursor`: the last
 *   delivery id a batch looked at), so that a restart carries a running one on.
 */
export const sql = `
CREATE INDEX deliveries_destination ON deliveries (destination_id, id);
CREATE INDEX deliveries_source ON deliveries (source_id, id) WHERE source_id IS NOT NULL;
CREATE INDEX deliveries_message ON deliveries (message_id) WHERE message_id IS NOT NULL;
CREATE INDEX deliveries_not_event ON deliveries (kind, id) WHERE kind <> 'event';
CREATE INDEX events_type ON events (type, received_at);
CREATE INDEX events_received ON events (received_at);
CREATE INDEX regulations_created ON regulations (created_at, id);

CREATE TABLE replay_jobs (
  id TEXT PRIMARY KEY,
  -- JSON of the filter (ids, destinationId, sinceMs, untilMs, errorClass).
  filter TEXT NOT NULL,
  status TEXT NOT NULL,
  total INTEGER NOT NULL,
  replayed INTEGER NOT NULL DEFAULT 0,
  cursor INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  error TEXT
);
CREATE INDEX replay_jobs_created ON replay_jobs (created_at, id);
`;
