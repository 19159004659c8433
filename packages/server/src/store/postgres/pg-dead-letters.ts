import type pg from 'pg';
import type { ReplayFilter } from '../delivery-queue.js';
import { errorClassPatterns } from '../delivery-search.js';
import { deleteDeliveries } from './pg-delivery-rows.js';
import { inTransaction } from './pg-pools.js';

/**
 * Dead-letters every pending job of a deleted destination (its queue rows go, its delivery
 * rows say why) and deletes its `delete` notices (see `DeliveryQueue.abandonPending`).
 * Returns how many pending jobs it took.
 */
export async function abandonPending(pool: pg.Pool, destinationId: string, nowMs: number): Promise<number> {
  return inTransaction(pool, async (client) => {
    const { rows: notices } = await client.query<{ id: number; status: string }>(
      `SELECT id, status FROM deliveries WHERE destination_id = $1 AND kind = 'delete'`,
      [destinationId],
    );
    await deleteDeliveries(
      client,
      notices.map((n) => n.id),
    );
    // Pending to dead: the store's totals count them here (migration 17).
    const r = await client.query<{ n: number }>(
      `WITH q AS (
         DELETE FROM delivery_queue WHERE delivery_id IN (SELECT delivery_id FROM delivery_queue WHERE destination_id = $2 ORDER BY delivery_id FOR UPDATE)
         RETURNING delivery_id
       ), d AS (
         UPDATE deliveries SET status = 'dead', dead_reason = 'destination_deleted', completed_at = $1, last_error = 'the destination was deleted'
         WHERE id IN (SELECT delivery_id FROM q)
         RETURNING id
       ), counted AS (
         INSERT INTO store_total_deltas (dead) SELECT COUNT(*) FROM d HAVING COUNT(*) > 0
       )
       SELECT COUNT(*)::int AS n FROM d`,
      [nowMs, destinationId],
    );
    return r.rows[0]!.n + notices.filter((n) => n.status === 'pending').length;
  });
}

/** The conditions of the dead letters `filter` takes, numbered from `$<first>`, or null when it takes none. */
function replayWhere(filter: ReplayFilter, first: number): { where: string[]; params: unknown[] } | null {
  // `dead_reason` marks exactly the dead letters, and the dead-letter index holds those rows.
  const where = [`status = 'dead'`, `dead_reason IS NOT NULL`];
  const params: unknown[] = [];
  const add = (clause: string, value: unknown) => {
    params.push(value);
    where.push(clause.replace('?', `$${first + params.length - 1}`));
  };
  if (filter.ids) {
    if (filter.ids.length === 0) return null;
    add('id = ANY(?::bigint[])', filter.ids);
  }
  if (filter.destinationId) add('destination_id = ?', filter.destinationId);
  if (filter.sinceMs !== undefined) add('completed_at >= ?', filter.sinceMs);
  if (filter.untilMs !== undefined) add('completed_at < ?', filter.untilMs);
  if (filter.errorClass !== undefined) add(`last_error LIKE ANY(?::text[])`, errorClassPatterns(filter.errorClass));
  if (filter.destinationIdsIn) {
    if (filter.destinationIdsIn.length === 0) return null;
    add('destination_id = ANY(?::text[])', filter.destinationIdsIn);
  }
  return { where, params };
}

/** How many dead letters `filter` takes now. */
export async function countReplayable(pool: pg.Pool, filter: ReplayFilter): Promise<number> {
  const found = replayWhere(filter, 1);
  if (!found) return 0;
  const { rows } = await pool.query<{ n: number }>(`SELECT COUNT(*)::bigint AS n FROM deliveries WHERE ${found.where.join(' AND ')}`, found.params);
  return rows[0]!.n;
}

/**
 * Puts the dead letters `filter` takes back in line (a delivery row pending again, and its
 * queue row), due at `nowMs`: all of them, or with `paging`, at most `paging.limit` of those after
 * `paging.afterId`, in id order. Resolves with how many, and the highest id replayed (0 for none).
 */
export async function replay(
  db: pg.Pool | pg.PoolClient,
  filter: ReplayFilter,
  nowMs: number,
  paging?: { afterId: number; limit: number },
): Promise<{ replayed: number; lastId: number }> {
  const found = replayWhere(filter, 2);
  if (!found) return { replayed: 0, lastId: 0 };
  const params: unknown[] = [nowMs, ...found.params];
  let taken = found.where.join(' AND ');
  let page = '';
  if (paging) {
    params.push(paging.afterId, paging.limit);
    // A CTE, read once: as a subquery of the UPDATE, the page could be read again for each row
    // updated, each time past the rows already locked and updated, until it took every row.
    page = `page AS (SELECT id FROM deliveries WHERE ${taken} AND id > $${params.length - 1} ORDER BY id LIMIT $${params.length} FOR UPDATE), `;
    taken = 'id IN (SELECT id FROM page)';
  }
  // A replay opens a fresh retry window: the old one has run out by definition. Only dead
  // letters are taken, so the store's totals lose as many dead (migration 17). The `LIKE`
  // patterns of an error class escape with a backslash, PostgreSQL's default.
  const { rows } = await db.query<{ n: number; last: number }>(
    `WITH ${page}d AS (
       UPDATE deliveries SET status = 'pending', trigger = 'manual', next_attempt_at = $1, first_attempt_at = NULL, attempt_count = 0,
         completed_at = NULL, dead_reason = NULL
       WHERE ${taken}
       RETURNING id, destination_id, next_attempt_at
     ), q AS (
       INSERT INTO delivery_queue (delivery_id, destination_id, next_attempt_at) SELECT id, destination_id, next_attempt_at FROM d
     ), counted AS (
       INSERT INTO store_total_deltas (dead) SELECT -COUNT(*) FROM d HAVING COUNT(*) > 0
     )
     SELECT COUNT(*)::bigint AS n, COALESCE(MAX(id), 0)::bigint AS last FROM d`,
    params,
  );
  return { replayed: rows[0]!.n, lastId: rows[0]!.last };
}
