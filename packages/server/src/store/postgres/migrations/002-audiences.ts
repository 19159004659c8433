/**
 * Audiences and computed traits: the same tables as SQLite's migration 002, times in integer
 * ms. `audience_members` holds, per audience, the value last queued for each user, so the
 * next sync sends only what changed. Rows exist only for users who currently hold a value.
 */
export const sql = `
CREATE TABLE audiences (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  -- JSON: destinationIds, sourceIds, rule. Read whole, never queried into.
  config TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  sync_count INTEGER NOT NULL DEFAULT 0,
  last_synced_at BIGINT
);
CREATE INDEX audiences_kind ON audiences (kind, id);

CREATE TABLE audience_members (
  audience_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  -- JSON of the value last queued: true for an audience member, the count of a computed trait.
  value TEXT NOT NULL,
  PRIMARY KEY (audience_id, user_id)
);

-- Trait rules look for each user's latest identify; without this they scan every event.
CREATE INDEX events_identify ON events (user_id, received_at) WHERE type = 'identify' AND user_id IS NOT NULL;
`;
