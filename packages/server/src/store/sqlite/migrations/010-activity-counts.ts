/**
 * Per-minute counts of messages stored and deliveries' outcomes, per node, for the admin API's
 * series (`GET /admin/v1/series`); a day of them is kept. Number 9 belongs to other work of
 * the same release.
 */
export const sql = `
CREATE TABLE activity_counts (
  node TEXT NOT NULL,
  minute INTEGER NOT NULL,
  kind TEXT NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (node, minute, kind)
);
CREATE INDEX activity_counts_by_minute ON activity_counts (minute);
`;
