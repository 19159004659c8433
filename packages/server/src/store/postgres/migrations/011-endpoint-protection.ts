/**
 * Endpoint protection: each destination's fortune (failing since when; disabled by Ferry when
 * and why), written on a change of fortune rather than per attempt, and the token buckets of
 * rate-limited destinations, one row each, that the nodes of a cluster take grants from.
 * Number 11 belongs to other work of the same release.
 */
export const sql = `
CREATE TABLE destination_health (
  destination_id TEXT PRIMARY KEY,
  failing_since BIGINT,
  disabled_at BIGINT,
  disabled_reason TEXT
);
CREATE TABLE rate_limit_buckets (
  destination_id TEXT PRIMARY KEY,
  tokens DOUBLE PRECISION NOT NULL,
  refilled_at BIGINT NOT NULL
);
`;
