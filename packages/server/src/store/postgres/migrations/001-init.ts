/** The first PostgreSQL schema: the same tables and columns as SQLite's, times in integer ms. */
export const sql = `
CREATE TABLE events (
  id BIGSERIAL PRIMARY KEY,
  source_id TEXT NOT NULL,
  message_id TEXT NOT NULL,
  type TEXT NOT NULL,
  user_id TEXT,
  anonymous_id TEXT,
  event TEXT,
  received_at BIGINT NOT NULL,
  json TEXT NOT NULL,
  UNIQUE (source_id, message_id)
);
CREATE INDEX events_user ON events (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX events_track ON events (event, received_at) WHERE event IS NOT NULL;

CREATE TABLE deliveries (
  id BIGSERIAL PRIMARY KEY,
  destination_id TEXT NOT NULL,
  source_id TEXT,
  event_id BIGINT,
  kind TEXT NOT NULL,
  message_id TEXT,
  user_id TEXT,
  -- The exact bytes signed and sent; TEXT, never JSONB, so nothing is re-serialised.
  body TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending',
  trigger TEXT NOT NULL DEFAULT 'scheduled',
  attempt_count INTEGER NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  first_attempt_at BIGINT,
  next_attempt_at BIGINT NOT NULL,
  lease_owner TEXT,
  completed_at BIGINT,
  dead_reason TEXT,
  last_error TEXT
);
CREATE INDEX deliveries_due ON deliveries (destination_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_status ON deliveries (status, id);
CREATE INDEX deliveries_user ON deliveries (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX deliveries_message ON deliveries (message_id) WHERE message_id IS NOT NULL;

CREATE TABLE attempts (
  id BIGSERIAL PRIMARY KEY,
  delivery_id BIGINT NOT NULL,
  url TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  latency_ms INTEGER NOT NULL,
  status_code INTEGER,
  error_class TEXT,
  error_message TEXT,
  response_body TEXT,
  trigger TEXT NOT NULL
);
CREATE INDEX attempts_delivery ON attempts (delivery_id);

CREATE TABLE rejections (
  id BIGSERIAL PRIMARY KEY,
  source_id TEXT NOT NULL,
  batch_index INTEGER NOT NULL,
  code TEXT NOT NULL,
  message TEXT NOT NULL,
  received_at BIGINT NOT NULL
);
CREATE TABLE rejection_counts (
  source_id TEXT NOT NULL,
  code TEXT NOT NULL,
  count BIGINT NOT NULL,
  PRIMARY KEY (source_id, code)
);

CREATE TABLE regulations (
  id TEXT PRIMARY KEY,
  user_ids TEXT NOT NULL,
  source_ids TEXT,
  status TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  finished_at BIGINT,
  events_deleted INTEGER NOT NULL DEFAULT 0,
  deliveries_deleted INTEGER NOT NULL DEFAULT 0,
  notifications_queued INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE sources (id TEXT PRIMARY KEY, config TEXT NOT NULL);
CREATE TABLE destinations (id TEXT PRIMARY KEY, config TEXT NOT NULL);
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;
