import type pg from 'pg';
import type { BacklogReads, DestinationBacklog } from '../backlog.js';
import { DeltaFolder } from './delta-folder.js';

/** Queue rows, in id order, looked through for each destination's oldest pending job before asking per destination. */
const oldestWindow = 10_000;

/**
 * `BacklogReads` on PostgreSQL. Pending jobs are counted from `backlog_deltas`, which the
 * queue's triggers add to once per statement (migration 14): a read sums a few rows per
 * destination and, once they are many, folds them into one (in one statement, so concurrent
 * folds and writes lose nothing). The oldest pending job of each destination is looked for
 * among the first {@link oldestWindow} queue rows in id order (ids grow with creation), where
 * it is unless another destination holds an older backlog that long; one not found there is
 * read from its own entries of the due index. Dead letters are counted by an index-only scan
 * (migration 10).
 */
export class PgBacklog implements BacklogReads {
  private readonly deltas: DeltaFolder;

  constructor(private readonly pool: pg.Pool) {
    this.deltas = new DeltaFolder(
      pool,
      'backlog_deltas',
      `WITH gone AS (DELETE FROM backlog_deltas RETURNING destination_id, pending)
       INSERT INTO backlog_deltas (destination_id, pending)
       SELECT destination_id, SUM(pending) FROM gone GROUP BY destination_id HAVING SUM(pending) <> 0`,
    );
  }

  async backlog(): Promise<DestinationBacklog[]> {
    const [pending, dead] = await Promise.all([
      this.pool.query<{ d: string; n: string; parts: number }>(
        `SELECT destination_id AS d, SUM(pending) AS n, COUNT(*)::int AS parts FROM backlog_deltas GROUP BY destination_id`,
      ),
      this.pool.query<{ d: string; n: number }>(
        `SELECT destination_id AS d, COUNT(*)::int AS n FROM deliveries WHERE dead_reason IS NOT NULL GROUP BY destination_id`,
      ),
    ]);
    this.deltas.foldIfMany(pending.rows.reduce((n, r) => n + r.parts, 0));
    const byId = new Map<string, DestinationBacklog>();
    const entry = (destinationId: string) => {
      let e = byId.get(destinationId);
      if (e === undefined) byId.set(destinationId, (e = { destinationId, pending: 0, dead: 0, oldestPendingCreatedAtMs: null }));
      return e;
    };
    for (const r of pending.rows) if (Number(r.n) > 0) entry(r.d).pending = Number(r.n);
    for (const r of dead.rows) entry(r.d).dead = r.n;
    const withPending = [...byId.values()].filter((e) => e.pending > 0);
    if (withPending.length > 0) {
      const oldest = await this.oldestCreated(withPending.map((e) => e.destinationId));
      for (const e of withPending) e.oldestPendingCreatedAtMs = oldest.get(e.destinationId) ?? null;
    }
    return [...byId.values()].sort((a, b) => (a.destinationId < b.destinationId ? -1 : a.destinationId > b.destinationId ? 1 : 0));
  }

  async retryingCount(destinationId: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT COUNT(*)::int AS n FROM delivery_queue q JOIN deliveries d ON d.id = q.delivery_id WHERE q.destination_id = $1 AND d.attempt_count > 0`,
      [destinationId],
    );
    return rows[0]!.n;
  }

  /** Folds the deltas at most every 10 s: called by writes, so the rows stay few where nothing reads the backlog (no scrape, no dashboard). */
  foldSoon(nowMs: number): void {
    this.deltas.foldSoon(nowMs);
  }

  /** Awaits a fold under way (the store closes). */
  settled(): Promise<void> {
    return this.deltas.settled();
  }

  private async oldestCreated(destinationIds: string[]): Promise<Map<string, number>> {
    const { rows: first } = await this.pool.query<{ d: string; id: string }>(
      `SELECT destination_id AS d, MIN(delivery_id) AS id
       FROM (SELECT destination_id, delivery_id FROM delivery_queue ORDER BY delivery_id LIMIT ${oldestWindow}) q
       WHERE destination_id = ANY($1::text[]) GROUP BY destination_id`,
      [destinationIds],
    );
    const ids = new Map(first.map((r) => [r.d, r.id]));
    for (const d of destinationIds.filter((d) => !ids.has(d))) {
      const { rows } = await this.pool.query<{ id: string | null }>(`SELECT MIN(delivery_id) AS id FROM delivery_queue WHERE destination_id = $1`, [d]);
      if (rows[0]?.id != null) ids.set(d, rows[0].id);
    }
    if (ids.size === 0) return new Map();
    const { rows } = await this.pool.query<{ id: string; c: string }>(`SELECT id, created_at AS c FROM deliveries WHERE id = ANY($1::bigint[])`, [
      [...ids.values()],
    ]);
    const created = new Map(rows.map((r) => [r.id, Number(r.c)]));
    const out = new Map<string, number>();
    for (const [d, id] of ids) {
      const c = created.get(id);
      if (c !== undefined) out.set(d, c);
    }
    return out;
  }
}
