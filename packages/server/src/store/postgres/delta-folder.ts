import type pg from 'pg';

/** Least time between two folds asked for by writes (see {@link DeltaFolder.foldSoon}). */
const foldIntervalMs = 10_000;
/** Delta rows beyond which a read folds them (see {@link DeltaFolder.foldIfMany}). */
const foldAbove = 1_000;

/**
 * Folds a table of delta rows, which writes add to once per statement (by statement-level
 * triggers, or in the statement itself) and readers sum (`backlog_deltas`,
 * `store_total_deltas`), into as few rows as their sums need. A fold is one
 * statement that deletes the rows it sees and inserts their sums, so rows written meanwhile
 * stay, and a concurrent fold waits on the rows this one deletes, then finds them gone: nothing
 * is lost. The table is vacuumed after, since a server with autovacuum off would otherwise keep
 * every folded row's space. One fold runs at a time; a failed one is left to the next, which
 * does the same work.
 */
export class DeltaFolder {
  private lastFoldMs = 0;
  private folding: Promise<void> | undefined;

  /**
   * @param table - the delta table, vacuumed after each fold
   * @param foldSql - the fold: `WITH gone AS (DELETE … RETURNING …) INSERT … SELECT sums FROM gone`
   */
  constructor(
    private readonly pool: pg.Pool,
    private readonly table: string,
    private readonly foldSql: string,
  ) {}

  /** Folds at most every {@link foldIntervalMs}: called by writes, so the rows stay few where nothing reads them. */
  foldSoon(nowMs: number): void {
    if (nowMs - this.lastFoldMs < foldIntervalMs) return;
    this.lastFoldMs = nowMs;
    this.fold();
  }

  /** Folds in the background when a read summed more than {@link foldAbove} rows. */
  foldIfMany(rowsRead: number): void {
    if (rowsRead > foldAbove) this.fold();
  }

  /** Folds now, in the background, unless a fold is under way. */
  private fold(): void {
    this.folding ??= (async () => {
      try {
        await this.pool.query(this.foldSql);
        await this.pool.query(`VACUUM ${this.table}`);
      } catch {
        // Folding again at the next read or interval does the same work; nothing is lost.
      } finally {
        this.folding = undefined;
      }
    })();
  }

  /** Awaits a fold under way (the store closes). */
  async settled(): Promise<void> {
    await this.folding;
  }
}
