import type pg from 'pg';
import type { ActivityCount, ActivityCounts, ActivityKind } from '../activity-counts.js';
import { inTransaction } from './pg-pools.js';

/** Per-minute activity counts on PostgreSQL (`activity_counts`): each node adds to its own rows, and any node sums them all. */
export class PgActivityCounts implements ActivityCounts {
  constructor(private readonly pool: pg.Pool) {}

  async add(node: string, counts: readonly ActivityCount[], deleteBeforeMs: number): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      if (counts.length > 0)
        await client.query(
          `INSERT INTO activity_counts (node, minute, kind, count)
           SELECT $1, m, k, c FROM unnest($2::bigint[], $3::text[], $4::bigint[]) AS x(m, k, c)
           ON CONFLICT (node, minute, kind) DO UPDATE SET count = activity_counts.count + excluded.count`,
          [node, counts.map((c) => c.minuteMs), counts.map((c) => c.kind), counts.map((c) => c.count)],
        );
      await client.query(`DELETE FROM activity_counts WHERE minute < $1`, [deleteBeforeMs]);
    });
  }

  async totals(fromMs: number): Promise<ActivityCount[]> {
    const { rows } = await this.pool.query<{ minute: string; kind: ActivityKind; count: string }>(
      `SELECT minute, kind, SUM(count) AS count FROM activity_counts WHERE minute >= $1 GROUP BY minute, kind ORDER BY minute, kind`,
      [fromMs],
    );
    return rows.map((r) => ({ minuteMs: Number(r.minute), kind: r.kind, count: Number(r.count) }));
  }
}
