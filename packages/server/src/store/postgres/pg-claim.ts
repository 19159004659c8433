import type pg from 'pg';
import type { ClaimedDelivery, ClaimRequest } from '../delivery-queue.js';
import { claimColumns, toClaimed, type ClaimTuple } from '../rows.js';

/**
 * When the next job of any of the destinations $1 is due: one seek in the due index per
 * destination. (MIN over `destination_id = ANY($1)` read every entry of every destination
 * named, the whole backlog, dead entries included.) Exported for the test of its plan.
 */
export const nextDueSql = `SELECT MIN(first.due) AS due FROM unnest($1::text[]) AS d(id)
  CROSS JOIN LATERAL (
    SELECT next_attempt_at AS due FROM delivery_queue WHERE destination_id = d.id ORDER BY next_attempt_at LIMIT 1
  ) AS first`;

/**
 * Planner settings of the connections that run {@link claimSql}, and nothing else. The claim
 * must read the due index in its own order and stop after the jobs it takes. The queue's rows
 * are narrow, so reading every due job of the destination through a bitmap and sorting them
 * can look cheaper to the planner, with or without statistics; it is not, with a backlog of a
 * million. Sorts, bitmap scans and table scans are priced out, never refused.
 */
export const claimPlanner = '-c enable_seqscan=off -c enable_bitmapscan=off -c enable_sort=off';

/**
 * The claim: $1 owner, $2 lease end, $3 destination, $4 now, $5 limit. It leases queue rows
 * read from the due index in its own order, taken again by primary key so that it touches
 * only those however large the backlog (`IN (subquery)` may be planned as a join that reads
 * the whole table). The delivery rows are read afterwards by {@link claimedSql}, in a
 * statement of their own: in this one they would be read as of its start, and a queue row
 * it leases may have been rescheduled by a completion that committed after that, which
 * would hand the worker the delivery as it was before that attempt. It answers with one row,
 * the ids leased as an array literal (NULL for none), which goes back to the server as it
 * came: a row per job to parse, and an array to build from them, cost this process more
 * than the rest of the claim. Exported for the test of its plan.
 */
export const claimSql = `WITH leased AS (
    UPDATE delivery_queue SET lease_owner = $1, next_attempt_at = $2
    WHERE delivery_id = ANY(ARRAY(
      SELECT delivery_id FROM delivery_queue
      WHERE destination_id = $3 AND next_attempt_at <= $4
      ORDER BY next_attempt_at, delivery_id LIMIT $5
      FOR UPDATE SKIP LOCKED))
    RETURNING delivery_id)
  SELECT array_agg(delivery_id)::text AS ids FROM leased`;

/** The deliveries a claim leased ($1 their ids), by primary key. Exported for the test of its plan. */
export const claimedSql = `SELECT ${claimColumns} FROM deliveries WHERE id = ANY($1::bigint[]) ORDER BY id`;

/** When the next job of any of these destinations is due, a lease's end for a held one; null when none is pending. */
export async function nextDueAt(pool: pg.Pool, destinationIds: string[]): Promise<number | null> {
  if (destinationIds.length === 0) return null;
  const { rows } = await pool.query<{ due: number | null }>(nextDueSql, [destinationIds]);
  return rows[0]?.due ?? null;
}

/**
 * Leases up to `limit` due jobs of one destination, then reads them. Runs on connections with
 * {@link claimPlanner}, durable ones: a claim undone by a crash while its worker goes on sending
 * would let another node send the same job at the same time.
 */
export async function claim(claimPool: pg.Pool, args: ClaimRequest): Promise<ClaimedDelivery[]> {
  const leased = await claimPool.query<{ ids: string | null }>({
    // Named: parsed once per connection, and after a few runs planned once: its plan (the due
    // index in order, then the jobs taken by id) suits every destination and backlog, and
    // planning it each time took a third as long as running it (0.6 ms against 1.8 for 55 jobs).
    name: 'ferry-claim',
    text: claimSql,
    values: [args.owner, args.nowMs + args.leaseMs, args.destinationId, args.nowMs, args.limit],
  });
  const ids = leased.rows[0]?.ids;
  if (!ids) return [];
  // A delivery purged by a deletion request since (its queue row went with it) is simply absent.
  const { rows } = await claimPool.query<ClaimTuple & unknown[]>({
    name: 'ferry-claimed',
    text: claimedSql,
    values: [ids],
    rowMode: 'array',
  });
  return rows.map(toClaimed);
}
