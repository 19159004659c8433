/** The first schema. Ids are integers for speed; the admin API shows them as they are. */
export const sql = `
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  source_id TEXT NOT NULL,
  message_id TEXT NOT NULL,
  type TEXT NOT NULL,
  user_id TEXT,
  anonymous_id TEXT,
  event TEXT,
  received_at INTEGER NOT NULL,
  json TEXT NOT NULL,
  UNIQUE (source_id, message_id)
);
CREATE INDEX events_user ON events (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX events_track ON events (event, received_at) WHERE event IS NOT NULL;

CREATE TABLE deliveries (
  id INTEGER PRIMARY KEY,
  destination_id TEXT NOT NULL,
  source_id TEXT,
  event_id INTEGER,
  kind TEXT NOT NULL,
  message_id TEXT,
  user_id TEXT,
  body TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending',
  trigger TEXT NOT NULL DEFAULT 'scheduled',
  attempt_count INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  first_attempt_at INTEGER,
  -- For a leased job this is the lease expiry: the job is due again if its worker vanishes.
  next_attempt_at INTEGER NOT NULL,
  lease_owner TEXT,
  completed_at INTEGER,
  dead_reason TEXT,
  last_error TEXT
);
CREATE INDEX deliveries_due ON deliveries (destination_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_status ON deliveries (status, id);
CREATE INDEX deliveries_user ON deliveries (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX deliveries_event ON deliveries (event_id) WHERE event_id IS NOT NULL;

CREATE TABLE attempts (
  id INTEGER PRIMARY KEY,
  delivery_id INTEGER NOT NULL,
  url TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  latency_ms INTEGER NOT NULL,
  status_code INTEGER,
  error_class TEXT,
  error_message TEXT,
  response_body TEXT,
  trigger TEXT NOT NULL
);
CREATE INDEX attempts_delivery ON attempts (delivery_id);

CREATE TABLE rejections (
  id INTEGER PRIMARY KEY,
  source_id TEXT NOT NULL,
  batch_index INTEGER NOT NULL,
  code TEXT NOT NULL,
  message TEXT NOT NULL,
  received_at INTEGER NOT NULL
);
CREATE TABLE rejection_counts (
  source_id TEXT NOT NULL,
  code TEXT NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (source_id, code)
);

CREATE TABLE regulations (
  id TEXT PRIMARY KEY,
  user_ids TEXT NOT NULL,
  source_ids TEXT,
  status TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  events_deleted INTEGER NOT NULL DEFAULT 0,
  deliveries_deleted INTEGER NOT NULL DEFAULT 0,
  notifications_queued INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE sources (id TEXT PRIMARY KEY, config TEXT NOT NULL);
CREATE TABLE destinations (id TEXT PRIMARY KEY, config TEXT NOT NULL);
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;
