import type Database from 'better-sqlite3';
import type { ReplayDeliveryOutcome } from '../delivery-queue.js';
import type { LeaseTable } from './lease-table.js';
import type { SqliteBacklogCounts } from './sqlite-backlog-counts.js';

/**
 * Puts one finished delivery (succeeded or dead) back in line, due at `nowMs`, with a fresh
 * retry window (see `DeliveryQueue.replayDelivery`). Run inside a transaction.
 */
export function replayDelivery(
  db: Database.Database,
  leases: LeaseTable,
  counts: SqliteBacklogCounts,
  args: { id: number; destinationIdsIn: readonly string[] },
  nowMs: number,
): ReplayDeliveryOutcome {
  const row = db.prepare(`SELECT status, destination_id FROM deliveries WHERE id = ?`).get(args.id) as
    { status: 'pending' | 'succeeded' | 'dead'; destination_id: string } | undefined;
  if (!row || !args.destinationIdsIn.includes(row.destination_id)) return 'not_found';
  if (row.status === 'pending') return 'pending';
  // The old window is over whichever way it ended: backoff and the 4-hour limit start again.
  db.prepare(
    `UPDATE deliveries SET status = 'pending', trigger = 'manual', next_attempt_at = ?, first_attempt_at = NULL, attempt_count = 0,
       completed_at = NULL, dead_reason = NULL, lease_owner = NULL
     WHERE id = ?`,
  ).run(nowMs, args.id);
  // A late outcome of the old window (a worker whose lease ran out) must not land on the new one.
  leases.unhold(args.id);
  counts.adjust(row.destination_id, 1, row.status === 'dead' ? -1 : 0, row.status === 'succeeded' ? -1 : 0);
  counts.lowerOldestBound(row.destination_id, args.id);
  return 'replayed';
}
