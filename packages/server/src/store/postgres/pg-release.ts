import type pg from 'pg';
import type { HeldLease } from '../delivery-queue.js';

/**
 * Hands leased jobs back to the queue: all of an owner's (a graceful stop), or the leases
 * named (jobs held ready that will not be sent). Resolves with how many.
 */
export async function releaseLeases(pool: pg.Pool, owner: string, nowMs: number, leases?: readonly HeldLease[]): Promise<number> {
  if (leases === undefined) {
    const r = await pool.query(`UPDATE delivery_queue SET lease_owner = NULL, next_attempt_at = $1 WHERE lease_owner = $2`, [nowMs, owner]);
    return r.rowCount ?? 0;
  }
  if (leases.length === 0) return 0;
  // A lease is its owner and its end: a later claim of the same job (after this one ran
  // out) set another end. The job takes its place in line again: the due time it had before
  // it was claimed, which the delivery row keeps, if that has come. Queue rows are locked in
  // id order first, as abandonPending and deletion requests lock them.
  const r = await pool.query(
    `UPDATE delivery_queue q SET lease_owner = NULL, next_attempt_at = LEAST($1, d.next_attempt_at)
     FROM deliveries d
     WHERE d.id = q.delivery_id AND q.delivery_id IN (
       SELECT h.delivery_id FROM delivery_queue h JOIN unnest($3::bigint[], $4::bigint[]) AS l(id, until) ON h.delivery_id = l.id
       WHERE h.lease_owner = $2 AND h.next_attempt_at = l.until
       ORDER BY h.delivery_id FOR UPDATE OF h)`,
    [nowMs, owner, leases.map((l) => l.id), leases.map((l) => l.leasedUntilMs)],
  );
  return r.rowCount ?? 0;
}

/**
 * Extends the owner's leases on the jobs `ids` to `untilMs`, in one statement; resolves with
 * the ids still leased to the owner (and so renewed). A lease already renewed further (by a
 * later renewal that overtook this one on another connection) keeps its end. Rows are locked
 * in id order, as the other statements on many queue rows lock them.
 */
export async function renewLeases(pool: pg.Pool, owner: string, ids: readonly number[], untilMs: number): Promise<number[]> {
  if (ids.length === 0) return [];
  const r = await pool.query<{ id: string }>(
    `UPDATE delivery_queue q SET next_attempt_at = GREATEST(q.next_attempt_at, $3)
     WHERE q.delivery_id IN (SELECT delivery_id FROM delivery_queue WHERE delivery_id = ANY($1::bigint[]) AND lease_owner = $2 ORDER BY delivery_id FOR UPDATE)
     RETURNING q.delivery_id AS id`,
    [ids, owner, untilMs],
  );
  return r.rows.map((row) => Number(row.id));
}
