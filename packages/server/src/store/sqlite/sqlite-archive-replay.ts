import type Database from 'better-sqlite3';
import { archiveStepOf, heldStep, pagedEvent, pickArchived, type ArchiveEventRow, type ArchiveStep } from '../archive-batch.js';
import { screenedIdentities, unplannedInScope, type PendingRegulationRow } from '../deletion-screen.js';
import type { ArchiveBatchArgs, ArchiveCountArgs, ArchiveFilter } from '../replay-jobs-store.js';
import type { ReplayJobRow } from '../rows.js';
import type { SqliteDeliveryRows } from './sqlite-delivery-rows.js';

/** The next batch of an archive job (see `ReplayJobsStore.archiveReplayBatch`); runs inside the caller's transaction. */
export function archiveStep(db: Database.Database, deliveries: SqliteDeliveryRows, row: ReplayJobRow, args: ArchiveBatchArgs): ArchiveStep {
  const filter = JSON.parse(row.filter) as ArchiveFilter;
  // The destination's count, kept with every write of a job's state, rather than a walk of the
  // due index up to the limit: the same number in one row read, however long the backlog.
  if (deliveries.counts.pending(filter.destinationId) >= args.backlogLimit) return heldStep;
  const pending = db.prepare(`SELECT user_ids, source_ids, plan FROM regulations WHERE status = 'pending'`).all() as PendingRegulationRow[];
  if (unplannedInScope(pending, filter.sourceIds)) return heldStep;
  const page = (
    db
      .prepare(
        `SELECT id, source_id, message_id, user_id, anonymous_id, received_at, json FROM events e
       WHERE source_id IN (SELECT value FROM json_each(@sources)) AND received_at >= @since AND received_at < @until
         AND (received_at, id) > (@cursorAt, @cursorId)
       ORDER BY received_at, id LIMIT @limit`,
      )
      .all({
        sources: JSON.stringify(filter.sourceIds),
        since: filter.sinceMs,
        until: filter.untilMs,
        cursorAt: row.cursor_at ?? filter.sinceMs,
        cursorId: row.cursor,
        limit: args.limit,
      }) as ArchiveEventRow[]
  ).map(pagedEvent);
  // The events the destination already has are looked up by id, not left out by the scan: a
  // range sent before would otherwise be walked whole, in one write transaction, to find none.
  const had = new Set(
    db
      .prepare<{ ids: string; destination: string }, number>(
        `SELECT event_id FROM deliveries WHERE event_id IN (SELECT value FROM json_each(@ids)) AND destination_id = @destination`,
      )
      .pluck()
      .all({ ids: JSON.stringify(page.map((e) => e.id)), destination: filter.destinationId }),
  );
  const picked = pickArchived(page, had, pending, args.render);
  if (picked === null) return heldStep;
  deliveries.batch(() => {
    for (const { event: e, body } of picked)
      deliveries.insert(filter.destinationId, e.sourceId, e.id, 'event', e.messageId, e.userId, body, args.nowMs, args.nowMs);
  });
  return archiveStepOf(page, picked.length, args.limit);
}

/** How many events an archive replay would take now (see `ReplayJobsStore.countArchive`). */
export function countArchive(db: Database.Database, args: ArchiveCountArgs): number {
  const screened = screenedIdentities(
    db.prepare(`SELECT user_ids, source_ids, plan FROM regulations WHERE status = 'pending'`).all() as PendingRegulationRow[],
  );
  return db
    .prepare(
      `SELECT COUNT(*) FROM events e
       WHERE source_id IN (SELECT value FROM json_each(@sources)) AND received_at >= @since AND received_at < @until
         AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.destination_id = @destination)
         AND NOT (COALESCE(user_id IN (SELECT value FROM json_each(@users)), 0)
                  OR (user_id IS NULL AND COALESCE(anonymous_id IN (SELECT value FROM json_each(@anonymous)), 0)))`,
    )
    .pluck()
    .get({
      sources: JSON.stringify(args.sourceIds),
      since: args.sinceMs,
      until: args.untilMs,
      destination: args.destinationId,
      users: JSON.stringify(screened.userIds),
      anonymous: JSON.stringify(screened.anonymousIds),
    }) as number;
}
