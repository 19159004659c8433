import type Database from 'better-sqlite3';
import type { BacklogReads, DestinationBacklog } from '../backlog.js';
import type { SqliteBacklogCounts } from './sqlite-backlog-counts.js';

/**
 * `BacklogReads` on SQLite. Pending jobs and dead letters are counted by the store's writes
 * as they happen (sqlite-backlog-counts.ts), so a read costs a row per destination. The oldest
 * pending job of each is found by walking the status index's pending entries in id order
 * (ids grow with creation) from a bound kept at or below it, up to its first: the entries
 * between the last oldest found and the new one are walked once, not the whole backlog at
 * every scrape.
 */
export class SqliteBacklog implements BacklogReads {
  private readonly oldestSql: Database.Statement<[number, string], { id: number; c: number }>;
  private readonly retryingSql: Database.Statement;

  constructor(
    db: Database.Database,
    private readonly counts: SqliteBacklogCounts,
  ) {
    this.oldestSql = db.prepare(
      `SELECT id, created_at AS c FROM deliveries INDEXED BY deliveries_status
       WHERE status = 'pending' AND id >= ? AND destination_id = ? ORDER BY id LIMIT 1`,
    );
    this.retryingSql = db.prepare(`SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending' AND destination_id = ? AND attempt_count > 0`);
  }

  async backlog(): Promise<DestinationBacklog[]> {
    return this.counts.rows().map((r) => ({
      destinationId: r.destinationId,
      pending: r.pending,
      dead: r.dead,
      oldestPendingCreatedAtMs: r.pending > 0 ? this.oldestPendingCreatedAt(r.destinationId) : null,
    }));
  }

  async retryingCount(destinationId: string): Promise<number> {
    return (this.retryingSql.get(destinationId) as { n: number }).n;
  }

  private oldestPendingCreatedAt(destinationId: string): number | null {
    const from = this.counts.oldestFrom(destinationId);
    // Counted pending but none found past the bound: a bound too high would hide the job for
    // good, so look again from the first (it cannot happen while every write lowers the bound).
    const row = this.oldestSql.get(from, destinationId) ?? (from > 0 ? this.oldestSql.get(0, destinationId) : undefined);
    if (row === undefined) return null;
    this.counts.foundOldest(destinationId, row.id);
    return row.c;
  }
}
