import type pg from 'pg';

/** Delta rows beyond which a read folds them into one. */
const foldAbove = 1_000;
/** Least time between two folds asked for by writes (see {@link PgStoreTotals.foldSoon}). */
const foldIntervalMs = 10_000;

/** Events stored and deliveries by status: `store_total_deltas` summed, and pending from the backlog's deltas. */
export interface StoreTotals {
  events: number;
  pending: number;
  succeeded: number;
  dead: number;
}

/**
 * The store's totals on PostgreSQL, from `store_total_deltas`, which the triggers of `events`
 * and `deliveries` add to once per statement (migration 15), and pending deliveries from the
 * queue's counts (`backlog_deltas`, migration 14, folded by pg-backlog.ts): a read sums the rows and, once
 * they are many, folds them into one (in one statement, so concurrent folds and writes lose
 * nothing), as the backlog's deltas are (pg-backlog.ts).
 */
export class PgStoreTotals {
  private lastFoldMs = 0;
  private folding: Promise<void> | undefined;

  constructor(private readonly pool: pg.Pool) {}

  async read(): Promise<StoreTotals> {
    const { rows } = await this.pool.query<StoreTotals & { parts: number }>(
      `SELECT COALESCE(SUM(events), 0)::bigint AS events, (SELECT COALESCE(SUM(pending), 0) FROM backlog_deltas)::bigint AS pending,
         COALESCE(SUM(succeeded), 0)::bigint AS succeeded, COALESCE(SUM(dead), 0)::bigint AS dead, COUNT(*)::int AS parts
       FROM store_total_deltas`,
    );
    const { parts, ...totals } = rows[0]!;
    if (parts > foldAbove) this.fold();
    return totals;
  }

  /**
   * Folds the deltas at most every {@link foldIntervalMs}: called by writes, so that the rows
   * stay few where nothing reads the totals.
   */
  foldSoon(nowMs: number): void {
    if (nowMs - this.lastFoldMs < foldIntervalMs) return;
    this.lastFoldMs = nowMs;
    this.fold();
  }

  /** Awaits a fold under way (the store closes). */
  async settled(): Promise<void> {
    await this.folding;
  }

  /**
   * Replaces the deltas this statement sees by their sum. Rows written meanwhile are not seen,
   * so they stay; a concurrent fold waits on the rows this one deletes, then finds them gone.
   * Vacuumed after, as the backlog's deltas are, for a server with autovacuum off.
   */
  private fold(): void {
    this.folding ??= (async () => {
      try {
        await this.pool.query(
          `WITH gone AS (DELETE FROM store_total_deltas RETURNING events, succeeded, dead)
           INSERT INTO store_total_deltas (events, succeeded, dead)
           SELECT SUM(events), SUM(succeeded), SUM(dead) FROM gone HAVING COUNT(*) > 0`,
        );
        await this.pool.query(`VACUUM store_total_deltas`);
      } catch {
        // Folding again at the next read or interval does the same work; nothing is lost.
      } finally {
        this.folding = undefined;
      }
    })();
  }
}
