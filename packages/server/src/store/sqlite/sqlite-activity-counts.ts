import type Database from 'better-sqlite3';
import type { ActivityCount, ActivityCounts, ActivityKind } from '../activity-counts.js';

/** Per-minute activity counts on SQLite (`activity_counts`); one process writes them. */
export class SqliteActivityCounts implements ActivityCounts {
  private readonly upsert: Database.Statement<[string, number, string, number]>;
  private readonly prune: Database.Statement<[number]>;
  private readonly sum: Database.Statement<[number], { minute: number; kind: ActivityKind; count: number }>;

  constructor(private readonly db: Database.Database) {
    this.upsert = db.prepare(
      `INSERT INTO activity_counts (node, minute, kind, count) VALUES (?, ?, ?, ?)
       ON CONFLICT (node, minute, kind) DO UPDATE SET count = count + excluded.count`,
    );
    this.prune = db.prepare(`DELETE FROM activity_counts WHERE minute < ?`);
    this.sum = db.prepare(`SELECT minute, kind, SUM(count) AS count FROM activity_counts WHERE minute >= ? GROUP BY minute, kind ORDER BY minute, kind`);
  }

  async add(node: string, counts: readonly ActivityCount[], deleteBeforeMs: number): Promise<void> {
    this.db.transaction(() => {
      for (const c of counts) this.upsert.run(node, c.minuteMs, c.kind, c.count);
      this.prune.run(deleteBeforeMs);
    })();
  }

  async totals(fromMs: number): Promise<ActivityCount[]> {
    return this.sum.all(fromMs).map((r) => ({ minuteMs: r.minute, kind: r.kind, count: r.count }));
  }
}
