import type pg from 'pg';
import type { ReplayDeliveryOutcome } from '../delivery-queue.js';

/**
 * Puts one finished delivery (succeeded or dead) back in line, due at `nowMs`, with a fresh
 * retry window (see `DeliveryQueue.replayDelivery`): its row pending again, and a queue row.
 */
export async function replayDelivery(pool: pg.Pool, args: { id: number; destinationIdsIn: readonly string[] }, nowMs: number): Promise<ReplayDeliveryOutcome> {
  // One statement: the status test and the change cannot be split by a worker's completion.
  const { rows } = await pool.query<{ n: number }>(
    `WITH d AS (
       UPDATE deliveries SET status = 'pending', trigger = 'manual', next_attempt_at = $1, first_attempt_at = NULL, attempt_count = 0,
         completed_at = NULL, dead_reason = NULL
       WHERE id = $2 AND status IN ('succeeded', 'dead') AND destination_id = ANY($3::text[])
       RETURNING id, destination_id, next_attempt_at
     ), q AS (
       INSERT INTO delivery_queue (delivery_id, destination_id, next_attempt_at) SELECT id, destination_id, next_attempt_at FROM d
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
