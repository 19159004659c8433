import type Database from 'better-sqlite3';
import type { ReplayFilter } from '../delivery-queue.js';
import type { LeaseTable } from './lease-table.js';
import type { SqliteDeliveryRows } from './sqlite-delivery-rows.js';

/**
 * Dead-letters every pending job of a deleted destination and deletes its `delete` notices
 * (see `DeliveryQueue.abandonPending`); its held jobs are let go. Returns how many pending jobs it took.
 */
export function abandonPending(db: Database.Database, leases: LeaseTable, deliveries: SqliteDeliveryRows, destinationId: string, nowMs: number): number {
  const notices = db.prepare(`SELECT id, status FROM deliveries WHERE destination_id = ? AND kind = 'delete'`).all(destinationId) as {
    id: number;
    status: string;
  }[];
  deliveries.delete(notices.map((n) => n.id));
  const abandoned = db
    .prepare(
      `UPDATE deliveries SET status = 'dead', dead_reason = 'destination_deleted', completed_at = ?, lease_owner = NULL,
         last_error = 'the destination was deleted'
       WHERE status = 'pending' AND destination_id = ?`,
    )
    .run(nowMs, destinationId).changes;
  // Its held jobs are dead now: an outcome still on its way is refused, and nothing is held.
  leases.unholdDestination(destinationId);
  return abandoned + notices.filter((n) => n.status === 'pending').length;
}

/** Puts the dead letters `filter` takes back in line, due at `nowMs`. Returns how many. */
export function replay(db: Database.Database, leases: LeaseTable, filter: ReplayFilter, nowMs: number): number {
  const where = [`status = 'dead'`];
  const params: unknown[] = [nowMs];
  if (filter.ids) {
    if (filter.ids.length === 0) return 0;
    where.push(`id IN (${filter.ids.map(() => '?').join(',')})`);
    params.push(...filter.ids);
  }
  if (filter.destinationId) {
    where.push('destination_id = ?');
    params.push(filter.destinationId);
  }
  if (filter.sinceMs !== undefined) {
    where.push('completed_at >= ?');
    params.push(filter.sinceMs);
  }
  if (filter.destinationIdsIn) {
    if (filter.destinationIdsIn.length === 0) return 0;
    where.push(`destination_id IN (${filter.destinationIdsIn.map(() => '?').join(',')})`);
    params.push(...filter.destinationIdsIn);
  }
  // A replay opens a fresh retry window: the old one has run out by definition.
  const replayed = db
    .prepare<unknown[], number>(
      `UPDATE deliveries SET status = 'pending', trigger = 'manual', next_attempt_at = ?, first_attempt_at = NULL, attempt_count = 0,
         completed_at = NULL, dead_reason = NULL, lease_owner = NULL
       WHERE ${where.join(' AND ')} RETURNING id`,
    )
    .pluck()
    .all(...params);
  // A dead job may still be held by a worker whose outcome is on its way (a destination
  // deleted mid-attempt): that outcome belongs to the old window, not to the replayed job.
  for (const id of replayed) leases.unhold(id);
  return replayed.length;
}
