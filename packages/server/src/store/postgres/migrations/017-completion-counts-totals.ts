/**
 * The statements that move deliveries between statuses add their own row to
 * `store_total_deltas`, in place of migration 15's `deliveries_changed` trigger. That trigger
 * copied every updated row, old and new, into transition tables to count them: each
 * completion statement (up to 500 wide rows, body included) paid for two such copies, and the
 * database's share of a delivery grew enough to slow delivery on a machine whose cores it
 * shares with the server (docs/performance.md). Those statements are few and each knows what
 * it moves: the completion (pending to succeeded or dead), the dead-lettering of a deleted
 * destination's jobs (pending to dead), and the replays (succeeded or dead back to pending);
 * their tests check the totals against the rows counted. A node of an earlier version running
 * beside this one during a rolling upgrade finishes, dead-letters and replays deliveries
 * without counting them (docs/operations.md, "Upgrades", gives the statement that recounts).
 */
export const sql = `
DROP TRIGGER deliveries_changed ON deliveries;
DROP FUNCTION ferry_deliveries_changed();
`;
