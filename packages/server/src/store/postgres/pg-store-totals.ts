import type pg from 'pg';
import { DeltaFolder } from './delta-folder.js';

/** Events stored and deliveries by status: `store_total_deltas` summed, and pending from the backlog's deltas. */
export interface StoreTotals {
  events: number;
  pending: number;
  succeeded: number;
  dead: number;
}

/**
 * The store's totals on PostgreSQL, from `store_total_deltas`, which the triggers of `events`
 * and of deletes from `deliveries` add to once per statement (migration 15), as do the
 * statements that move deliveries between statuses (migration 17), and pending deliveries from the
 * queue's counts (`backlog_deltas`, migration 14): a read sums the rows and, once they are
 * many, folds them into one ({@link DeltaFolder}).
 */
export class PgStoreTotals {
  private readonly deltas: DeltaFolder;

  constructor(private readonly pool: pg.Pool) {
    this.deltas = new DeltaFolder(
      pool,
      'store_total_deltas',
      `WITH gone AS (DELETE FROM store_total_deltas RETURNING events, succeeded, dead)
       INSERT INTO store_total_deltas (events, succeeded, dead)
       SELECT SUM(events), SUM(succeeded), SUM(dead) FROM gone HAVING COUNT(*) > 0`,
    );
  }

  async read(): Promise<StoreTotals> {
    const { rows } = await this.pool.query<StoreTotals & { parts: number }>(
      `SELECT COALESCE(SUM(events), 0)::bigint AS events, (SELECT COALESCE(SUM(pending), 0) FROM backlog_deltas)::bigint AS pending,
         COALESCE(SUM(succeeded), 0)::bigint AS succeeded, COALESCE(SUM(dead), 0)::bigint AS dead, COUNT(*)::int AS parts
       FROM store_total_deltas`,
    );
    const { parts, ...totals } = rows[0]!;
    this.deltas.foldIfMany(parts);
    return totals;
  }

  /** Folds the deltas at most every 10 s: called by writes, so the rows stay few where nothing reads the totals. */
  foldSoon(nowMs: number): void {
    this.deltas.foldSoon(nowMs);
  }

  /** Awaits a fold under way (the store closes). */
  settled(): Promise<void> {
    return this.deltas.settled();
  }
}
