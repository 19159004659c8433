import type pg from 'pg';
import type { ReplayFilter } from '../delivery-queue.js';
import { deleteDeliveries, queued } from './pg-delivery-rows.js';
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
    const r = await client.query(
      `WITH q AS (
         DELETE FROM delivery_queue WHERE delivery_id IN (SELECT delivery_id FROM delivery_queue WHERE destination_id = $2 ORDER BY delivery_id FOR UPDATE)
         RETURNING delivery_id)
       UPDATE deliveries SET status = 'dead', dead_reason = 'destination_deleted', completed_at = $1, last_error = 'the destination was deleted'
       WHERE id IN (SELECT delivery_id FROM q)`,
      [nowMs, destinationId],
    );
    return (r.rowCount ?? 0) + notices.filter((n) => n.status === 'pending').length;
  });
}

/** Puts the dead letters `filter` takes back in line (a delivery row pending again, and its queue row), due at `nowMs`. Returns how many. */
export async function replay(pool: pg.Pool, filter: ReplayFilter, nowMs: number): Promise<number> {
  // `dead_reason` marks exactly the dead letters, and the dead-letter index holds those rows.
  const where = [`status = 'dead'`, `dead_reason IS NOT NULL`];
  const params: unknown[] = [nowMs];
  if (filter.ids) {
    if (filter.ids.length === 0) return 0;
    params.push(filter.ids);
    where.push(`id = ANY($${params.length}::bigint[])`);
  }
  if (filter.destinationId) {
    params.push(filter.destinationId);
    where.push(`destination_id = $${params.length}`);
  }
  if (filter.sinceMs !== undefined) {
    params.push(filter.sinceMs);
    where.push(`completed_at >= $${params.length}`);
  }
  if (filter.destinationIdsIn) {
    if (filter.destinationIdsIn.length === 0) return 0;
    params.push(filter.destinationIdsIn);
    where.push(`destination_id = ANY($${params.length}::text[])`);
  }
  // A replay opens a fresh retry window: the old one has run out by definition.
  const r = await pool.query(
    queued(`UPDATE deliveries SET status = 'pending', trigger = 'manual', next_attempt_at = $1, first_attempt_at = NULL, attempt_count = 0,
       completed_at = NULL, dead_reason = NULL
     WHERE ${where.join(' AND ')}`),
    params,
  );
  return r.rowCount ?? 0;
}
