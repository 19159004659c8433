import type pg from 'pg';
import type { ReplayDeliveryOutcome } from '../delivery-queue.js';

/**
 * Puts one finished delivery (succeeded or dead) back in line, due at `nowMs`, with a fresh
 * retry window (see `DeliveryQueue.replayDelivery`): its row pending again, and a queue row.
 */
export async function replayDelivery(pool: pg.Pool, args: { id: number; destinationIdsIn: readonly string[] }, nowMs: number): Promise<ReplayDeliveryOutcome> {
  // One statement: the status test and the change cannot be split by a worker's completion.
  // The status it had leaves the store's totals (migration 17): read from the row as locked
  // (`was`), the newest version, not as this statement's snapshot saw it, since a replay and a
  // completion may have moved it since (dead, then pending, then succeeded).
  const { rows } = await pool.query<{ n: number }>(
    `WITH was AS (
       SELECT id, status FROM deliveries
       WHERE id = $2 AND status IN ('succeeded', 'dead') AND destination_id = ANY($3::text[])
       FOR UPDATE
     ), d AS (
       UPDATE deliveries d SET status = 'pending', trigger = 'manual', next_attempt_at = $1, first_attempt_at = NULL, attempt_count = 0,
         completed_at = NULL, dead_reason = NULL
       FROM was
       WHERE d.id = was.id
       RETURNING d.id, d.destination_id, d.next_attempt_at, was.status AS was
     ), q AS (
       INSERT INTO delivery_queue (delivery_id, destination_id, next_attempt_at) SELECT id, destination_id, next_attempt_at FROM d
     ), counted AS (
       INSERT INTO store_total_deltas (succeeded, dead)
       SELECT -COUNT(*) FILTER (WHERE was = 'succeeded'), -COUNT(*) FILTER (WHERE was = 'dead') FROM d HAVING COUNT(*) > 0
     )
     SELECT COUNT(*)::int AS n FROM d`,
    [nowMs, args.id, args.destinationIdsIn],
  );
  if (rows[0]!.n === 1) return 'replayed';
  const found = await pool.query<{ status: string }>(`SELECT status FROM deliveries WHERE id = $1 AND destination_id = ANY($2::text[])`, [
    args.id,
    args.destinationIdsIn,
  ]);
  return found.rows[0]?.status === 'pending' ? 'pending' : 'not_found';
}
