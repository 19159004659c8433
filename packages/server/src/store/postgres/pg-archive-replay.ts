import type pg from 'pg';
import { archiveStepOf, heldStep, pagedEvent, pickArchived, type ArchiveEventRow, type ArchiveStep } from '../archive-batch.js';
import { screenedIdentities, unplannedInScope, type PendingRegulationRow } from '../deletion-screen.js';
import type { ArchiveBatchArgs, ArchiveCountArgs, ArchiveFilter } from '../replay-jobs-store.js';
import type { ReplayJobRow } from '../rows.js';
import { queued } from './pg-delivery-rows.js';

/** How many pending deliveries a destination has, counted up to `limit` (its queue rows, read until there are enough). */
export async function pendingUpTo(client: pg.PoolClient | pg.Pool, destinationId: string, limit: number): Promise<number> {
  const { rows } = await client.query<{ n: string }>(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM delivery_queue WHERE destination_id = $1 LIMIT $2) q`, [
    destinationId,
    limit,
  ]);
  return Number(rows[0]!.n);
}

/** The next batch of an archive job (see `ReplayJobsStore.archiveReplayBatch`), in the caller's transaction, which holds the job's row lock. */
export async function archiveStep(client: pg.PoolClient, row: ReplayJobRow, args: ArchiveBatchArgs): Promise<ArchiveStep> {
  const filter = JSON.parse(row.filter) as ArchiveFilter;
  if ((await pendingUpTo(client, filter.destinationId, args.backlogLimit)) >= args.backlogLimit) return heldStep;
  const pending = await client.query<PendingRegulationRow>(`SELECT user_ids, source_ids, plan FROM regulations WHERE status = 'pending'`);
  if (unplannedInScope(pending.rows, filter.sourceIds)) return heldStep;
  // A key-share lock on each event read: a deletion request's purge, which locks the events it
  // deletes FOR UPDATE before it reads their deliveries, waits for this batch and then deletes
  // its deliveries too; an event the purge holds is waited for, and skipped once it is gone.
  const { rows } = await client.query<ArchiveEventRow>(
    `SELECT id, source_id, message_id, user_id, anonymous_id, received_at, json FROM events e
     WHERE source_id = ANY($1::text[]) AND received_at >= $2 AND received_at < $3 AND (received_at, id) > ($4::bigint, $5::bigint)
     ORDER BY received_at, id LIMIT $6 FOR KEY SHARE`,
    [filter.sourceIds, filter.sinceMs, filter.untilMs, row.cursor_at ?? filter.sinceMs, row.cursor, args.limit],
  );
  const page = rows.map(pagedEvent);
  // Looked up by id rather than left out by the scan, which would walk a range already sent whole to find none.
  const had = new Set(
    (
      await client.query<{ event_id: string }>(`SELECT event_id FROM deliveries WHERE event_id = ANY($1::bigint[]) AND destination_id = $2`, [
        page.map((e) => e.id),
        filter.destinationId,
      ])
    ).rows.map((r) => Number(r.event_id)),
  );
  const picked = pickArchived(page, had, pending.rows, args.render);
  if (picked === null) return heldStep;
  if (picked.length > 0)
    await client.query(
      queued(`INSERT INTO deliveries (destination_id, source_id, event_id, kind, message_id, user_id, body, created_at, next_attempt_at)
       SELECT $1, b, c, 'event', m, u, body, $6, $6 FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $7::text[]) AS x(b, c, m, u, body)`),
      [
        filter.destinationId,
        picked.map((p) => p.event.sourceId),
        picked.map((p) => p.event.id),
        picked.map((p) => p.event.messageId),
        picked.map((p) => p.event.userId),
        args.nowMs,
        picked.map((p) => p.body),
      ],
    );
  return archiveStepOf(page, picked.length, args.limit);
}

/** How many events an archive replay would take now (see `ReplayJobsStore.countArchive`). */
export async function countArchive(pool: pg.Pool, args: ArchiveCountArgs): Promise<number> {
  const pending = await pool.query<PendingRegulationRow>(`SELECT user_ids, source_ids, plan FROM regulations WHERE status = 'pending'`);
  const screened = screenedIdentities(pending.rows);
  const { rows } = await pool.query<{ n: string }>(
    `SELECT COUNT(*) AS n FROM events e
     WHERE source_id = ANY($1::text[]) AND received_at >= $2 AND received_at < $3
       AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.destination_id = $4)
       AND NOT (COALESCE(user_id = ANY($5::text[]), false) OR (user_id IS NULL AND COALESCE(anonymous_id = ANY($6::text[]), false)))`,
    [args.sourceIds, args.sinceMs, args.untilMs, args.destinationId, screened.userIds, screened.anonymousIds],
  );
  return Number(rows[0]!.n);
}
