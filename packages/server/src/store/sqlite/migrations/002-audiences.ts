/**
 * Audiences and computed traits. `audience_members` holds, per audience, the value last
 * queued for each user, so the next sync sends only what changed. Rows exist only for users
 * who qualify: a user who stops qualifying is sent `false` (or `0`) and the row goes.
 */
export const sql = `
CREATE TABLE audiences (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  -- JSON: destinationIds, sourceIds, rule. Read whole, never queried into.
  config TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  sync_count INTEGER NOT NULL DEFAULT 0,
  last_synced_at INTEGER
);
CREATE INDEX audiences_kind ON audiences (kind, id);

CREATE TABLE audience_members (
  audience_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  -- JSON of the value last queued: true for an audience member, the count of a computed trait.
  value TEXT NOT NULL,
  PRIMARY KEY (audience_id, user_id)
) WITHOUT ROWID;

-- Trait rules look for each user's latest identify; without this they scan every event.
CREATE INDEX events_identify ON events (user_id, received_at) WHERE type = 'identify' AND user_id IS NOT NULL;
`;
