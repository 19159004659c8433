import type Database from 'better-sqlite3';
import type { ReplayFilter } from '../delivery-queue.js';
import { errorClassPatterns } from '../delivery-search.js';
import type { LeaseTable } from './lease-table.js';
import type { SqliteBacklogCounts } from './sqlite-backlog-counts.js';
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
  deliveries.counts.adjust(destinationId, -abandoned, abandoned);
  // Its held jobs are dead now: an outcome still on its way is refused, and nothing is held.
  leases.unholdDestination(destinationId);
  return abandoned + notices.filter((n) => n.status === 'pending').length;
}

/** The conditions of the dead letters `filter` takes, or null when it takes none. */
function replayWhere(filter: ReplayFilter): { where: string[]; params: unknown[] } | null {
  const where = [`status = 'dead'`];
  const params: unknown[] = [];
  if (filter.ids) {
    if (filter.ids.length === 0) return null;
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
  if (filter.untilMs !== undefined) {
    where.push('completed_at < ?');
    params.push(filter.untilMs);
  }
  if (filter.errorClass !== undefined) {
    const patterns = errorClassPatterns(filter.errorClass);
    where.push(`(${patterns.map(() => `last_error LIKE ? ESCAPE '\\'`).join(' OR ')})`);
    params.push(...patterns);
  }
  if (filter.destinationIdsIn) {
    if (filter.destinationIdsIn.length === 0) return null;
    where.push(`destination_id IN (${filter.destinationIdsIn.map(() => '?').join(',')})`);
    params.push(...filter.destinationIdsIn);
  }
  return { where, params };
}

/** How many dead letters `filter` takes now. */
export function countReplayable(db: Database.Database, filter: ReplayFilter): number {
  const found = replayWhere(filter);
  if (!found) return 0;
  return db
    .prepare<unknown[], number>(`SELECT COUNT(*) FROM deliveries WHERE ${found.where.join(' AND ')}`)
    .pluck()
    .get(...found.params)!;
}

/**
 * Puts the dead letters `filter` takes back in line, due at `nowMs`: all of them, or with
 * `page`, at most `page.limit` of those after `page.afterId`, in id order. Returns their ids.
 */
export function replay(
  db: Database.Database,
  leases: LeaseTable,
  counts: SqliteBacklogCounts,
  filter: ReplayFilter,
  nowMs: number,
  page?: { afterId: number; limit: number },
): number[] {
  const found = replayWhere(filter);
  if (!found) return [];
  const { where } = found;
  let { params } = found;
  let paging = '';
  if (page) {
    paging = `AND id IN (SELECT id FROM deliveries WHERE ${where.join(' AND ')} AND id > ? ORDER BY id LIMIT ?)`;
    params = [...params, ...params, page.afterId, page.limit];
  }
  // A replay opens a fresh retry window: the old one has run out by definition.
  const rows = db
    .prepare<unknown[], { id: number; d: string }>(
      `UPDATE deliveries SET status = 'pending', trigger = 'manual', next_attempt_at = ?, first_attempt_at = NULL, attempt_count = 0,
         completed_at = NULL, dead_reason = NULL, lease_owner = NULL
       WHERE ${where.join(' AND ')} ${paging} RETURNING id, destination_id AS d`,
    )
    .all(nowMs, ...params);
  const by = new Map<string, { n: number; least: number }>();
  for (const r of rows) {
    // A dead job may still be held by a worker whose outcome is on its way (a destination
    // deleted mid-attempt): that outcome belongs to the old window, not to the replayed job.
    leases.unhold(r.id);
    const e = by.get(r.d);
    if (e === undefined) by.set(r.d, { n: 1, least: r.id });
    else {
      e.n += 1;
      e.least = Math.min(e.least, r.id);
    }
  }
  for (const [d, e] of by) {
    counts.adjust(d, e.n, -e.n);
    counts.lowerOldestBound(d, e.least);
  }
  return rows.map((r) => r.id);
}
