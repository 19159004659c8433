import type Database from 'better-sqlite3';
import type { BacklogReads, DestinationBacklog } from '../backlog.js';

/**
 * `BacklogReads` on SQLite. Pending jobs are counted, and the oldest found (the least rowid:
 * ids grow with creation), in one pass over the due index, which holds the destination and the
 * rowid of every pending job and nothing of the rest (about 35 ms a million entries); dead
 * letters over an index of their own (migration 7). Nothing is written for it on the way in.
 */
export class SqliteBacklog implements BacklogReads {
  private readonly pendingSql: Database.Statement;
  private readonly deadSql: Database.Statement;
  private readonly createdSql: Database.Statement;
  private readonly retryingSql: Database.Statement;

  constructor(db: Database.Database) {
    this.pendingSql = db.prepare(
      `SELECT destination_id AS d, COUNT(*) AS n, MIN(id) AS oldest FROM deliveries INDEXED BY deliveries_due WHERE status = 'pending' GROUP BY destination_id`,
    );
    this.deadSql = db.prepare(
      `SELECT destination_id AS d, COUNT(*) AS n FROM deliveries INDEXED BY deliveries_dead_destination WHERE status = 'dead' GROUP BY destination_id`,
    );
    this.createdSql = db.prepare(`SELECT created_at AS c FROM deliveries WHERE id = ?`);
    this.retryingSql = db.prepare(`SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending' AND destination_id = ? AND attempt_count > 0`);
  }

  async backlog(): Promise<DestinationBacklog[]> {
    const byId = new Map<string, DestinationBacklog>();
    const entry = (destinationId: string) => {
      let e = byId.get(destinationId);
      if (e === undefined) byId.set(destinationId, (e = { destinationId, pending: 0, dead: 0, oldestPendingCreatedAtMs: null }));
      return e;
    };
    for (const r of this.pendingSql.all() as { d: string; n: number; oldest: number }[]) {
      const e = entry(r.d);
      e.pending = r.n;
      e.oldestPendingCreatedAtMs = (this.createdSql.get(r.oldest) as { c: number } | undefined)?.c ?? null;
    }
    for (const r of this.deadSql.all() as { d: string; n: number }[]) entry(r.d).dead = r.n;
    return [...byId.values()].sort((a, b) => (a.destinationId < b.destinationId ? -1 : a.destinationId > b.destinationId ? 1 : 0));
  }

  async retryingCount(destinationId: string): Promise<number> {
    return (this.retryingSql.get(destinationId) as { n: number }).n;
  }
}
