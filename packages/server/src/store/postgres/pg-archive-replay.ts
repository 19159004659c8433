import type pg from 'pg';
import { deletionScreen, screenedIdentities, unplannedInScope, type PendingRegulationRow } from '../deletion-screen.js';
import { unrouted, type ArchiveBatchArgs, type ArchiveCountArgs, type ArchiveFilter } from '../replay-jobs-store.js';
import type { ReplayJobRow } from '../rows.js';
import { queued } from './pg-delivery-rows.js';

/** What one archive batch did to its job, for the caller to record with the cursor. */
export interface ArchiveStep {
  held: boolean;
  queued: number;
  skipped: number;
  /** The last event looked at, or null when none was. */
  last: { receivedAtMs: number; id: number } | null;
  done: boolean;
}

interface EventRow {
  id: string;
  source_id: string;
  message_id: string;
  user_id: string | null;
  anonymous_id: string | null;
  received_at: string;
  json: string;
}

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
  if ((await pendingUpTo(client, filter.destinationId, args.backlogLimit)) >= args.backlogLimit)
    return { held: true, queued: 0, skipped: 0, last: null, done: false };
  const pending = await client.query<PendingRegulationRow>(`SELECT user_ids, source_ids, plan FROM regulations WHERE status = 'pending'`);
  if (unplannedInScope(pending.rows, filter.sourceIds)) return { held: true, queued: 0, skipped: 0, last: null, done: false };
  // A key-share lock on each event read: a deletion request's purge, which locks the events it
  // deletes FOR UPDATE before it reads their deliveries, waits for this batch and then deletes
  // its deliveries too; an event the purge holds is waited for, and skipped once it is gone.
  const { rows: events } = await client.query<EventRow>(
    `SELECT id, source_id, message_id, user_id, anonymous_id, received_at, json FROM events e
     WHERE source_id = ANY($1::text[]) AND received_at >= $2 AND received_at < $3 AND (received_at, id) > ($4::bigint, $5::bigint)
     ORDER BY received_at, id LIMIT $6 FOR KEY SHARE`,
    [filter.sourceIds, filter.sinceMs, filter.untilMs, row.cursor_at ?? filter.sinceMs, row.cursor, args.limit],
  );
  // Looked up by id rather than left out by the scan, which would walk a range already sent whole to find none.
  const had = new Set(
    (
      await client.query<{ event_id: string }>(`SELECT event_id FROM deliveries WHERE event_id = ANY($1::bigint[]) AND destination_id = $2`, [
        events.map((e) => e.id),
        filter.destinationId,
      ])
    ).rows.map((r) => String(r.event_id)),
  );
  const screened = deletionScreen(pending.rows);
  const picked: { event: EventRow; body: string }[] = [];
  for (const e of events) {
    if (had.has(String(e.id))) continue;
    const event = { id: Number(e.id), sourceId: e.source_id, messageId: e.message_id, userId: e.user_id, anonymousId: e.anonymous_id, json: e.json };
    const body = screened(event) ? null : args.render(event);
    if (body === unrouted) return { held: true, queued: 0, skipped: 0, last: null, done: false };
    if (body !== null) picked.push({ event: e, body });
  }
  if (picked.length > 0)
    await client.query(
      queued(`INSERT INTO deliveries (destination_id, source_id, event_id, kind, message_id, user_id, body, created_at, next_attempt_at)
       SELECT $1, b, c, 'event', m, u, body, $6, $6 FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $7::text[]) AS x(b, c, m, u, body)`),
      [
        filter.destinationId,
        picked.map((p) => p.event.source_id),
        picked.map((p) => p.event.id),
        picked.map((p) => p.event.message_id),
        picked.map((p) => p.event.user_id),
        args.nowMs,
        picked.map((p) => p.body),
      ],
    );
  const lastRow = events.at(-1);
  return {
    held: false,
    queued: picked.length,
    skipped: events.length - picked.length,
    last: lastRow ? { receivedAtMs: Number(lastRow.received_at), id: Number(lastRow.id) } : null,
    done: events.length < args.limit,
  };
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
