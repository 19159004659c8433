/**
 * Each destination's fortune: failing since when, disabled by Ferry when and why (written on a
 * change of fortune, not per attempt). One process owns the file, so rate limits keep their
 * buckets in memory and need no table. Number 8 belongs to other work of the same release.
 */
export const sql = `
CREATE TABLE destination_health (
  destination_id TEXT PRIMARY KEY,
  failing_since INTEGER,
  disabled_at INTEGER,
  disabled_reason TEXT
);
`;
