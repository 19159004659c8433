import { nextBatchAt, pacedUntil } from './archive-pacing.js';
import { deletionScreen, type PendingRegulationRow } from './deletion-screen.js';
import { unrouted, type ArchiveBatchArgs, type ArchiveBatchResult, type ArchivedEvent, type ReplayJobRecord } from './replay-jobs-store.js';
import { toReplayJob, type ReplayJobRow } from './rows.js';

/**
 * What both dialects do alike in one batch of an archive replay job
 * (`ReplayJobsStore.archiveReplayBatch`): which events of the page read get a delivery, what
 * the batch did, and what it answers. Each dialect reads and writes its own rows around them,
 * in its own transaction.
 */

/** An event of the page a batch read, with when it was received: the first half of the job's cursor. */
export interface PagedEvent extends ArchivedEvent {
  receivedAtMs: number;
}

/** The columns of `events` a batch reads (PostgreSQL hands its bigints over as strings). */
export interface ArchiveEventRow {
  id: number | string;
  source_id: string;
  message_id: string;
  user_id: string | null;
  anonymous_id: string | null;
  received_at: number | string;
  json: string;
}

/** An event row read by a batch, as the page holds it. */
export function pagedEvent(e: ArchiveEventRow): PagedEvent {
  return {
    id: Number(e.id),
    sourceId: e.source_id,
    messageId: e.message_id,
    userId: e.user_id,
    anonymousId: e.anonymous_id,
    json: e.json,
    receivedAtMs: Number(e.received_at),
  };
}

/** What one archive batch did to its job, for the caller to record with the cursor. */
export interface ArchiveStep {
  held: boolean;
  queued: number;
  skipped: number;
  /** The last event looked at, or null when none was. */
  last: { receivedAtMs: number; id: number } | null;
  done: boolean;
}

/** A batch that did nothing: the destination's backlog, a deletion request not yet planned, or an unrouted event held it. */
export const heldStep: ArchiveStep = Object.freeze({ held: true, queued: 0, skipped: 0, last: null, done: false });

/** An event of the page picked for a delivery, with the body the destination gets. */
export interface PickedEvent {
  event: PagedEvent;
  body: string;
}

/**
 * The events of `page` that get a delivery, each with its body, in page order: not one the
 * destination already has (`had`, by event id), not one whose user a pending deletion request
 * names, not one the renderer drops. Null when the renderer knows no route for one of them:
 * then the whole batch is held.
 */
export function pickArchived(
  page: readonly PagedEvent[],
  had: ReadonlySet<number>,
  pending: readonly PendingRegulationRow[],
  render: ArchiveBatchArgs['render'],
): PickedEvent[] | null {
  const screened = deletionScreen(pending);
  const picked: PickedEvent[] = [];
  for (const event of page) {
    if (had.has(event.id)) continue;
    const body = screened(event) ? null : render(event);
    if (body === unrouted) return null;
    if (body !== null) picked.push({ event, body });
  }
  return picked;
}

/** What a batch that read `page` (asked for `limit` events) and queued `queued` of them did. */
export function archiveStepOf(page: readonly PagedEvent[], queued: number, limit: number): ArchiveStep {
  const last = page.at(-1);
  return {
    held: false,
    queued,
    skipped: page.length - queued,
    last: last ? { receivedAtMs: last.receivedAtMs, id: last.id } : null,
    done: page.length < limit,
  };
}

/** Whether a batch may run on `row` at `nowMs`: a running archive job whose rate does not hold it. */
export function archiveBatchMayRun(row: ReplayJobRow | undefined, nowMs: number): row is ReplayJobRow {
  return row !== undefined && row.status === 'running' && row.kind === 'archive' && pacedUntil(row, nowMs) === null;
}

/**
 * The answer of a batch that may not run ({@link archiveBatchMayRun}): nothing done, and held
 * until `nextBatchAtMs` when the job's rate holds it; `job` null when there is no such job.
 */
export function refusedBatch(row: ReplayJobRow | undefined, nowMs: number): ArchiveBatchResult {
  if (!row || row.status !== 'running' || row.kind !== 'archive') return { job: row ? toReplayJob(row) : null, held: false, queued: 0, nextBatchAtMs: null };
  return { job: toReplayJob(row), held: true, queued: 0, nextBatchAtMs: pacedUntil(row, nowMs) };
}

/** What a batch that was not held writes to its job's row. */
export interface ArchiveProgress {
  /** Added to `replayed`. */
  queued: number;
  /** Added to `skipped`. */
  skipped: number;
  cursor: number;
  cursorAtMs: number | null;
  status: 'running' | 'done';
  finishedAtMs: number | null;
  nextBatchAtMs: number | null;
}

/** The progress `step` makes on the job of `row`: its cursor moves to the last event looked at, if any; done once a page came short. */
export function archiveProgress(row: ReplayJobRow, step: ArchiveStep, nowMs: number): ArchiveProgress {
  return {
    queued: step.queued,
    skipped: step.skipped,
    cursor: step.last?.id ?? row.cursor,
    cursorAtMs: step.last?.receivedAtMs ?? row.cursor_at,
    status: step.done ? 'done' : 'running',
    finishedAtMs: step.done ? nowMs : null,
    nextBatchAtMs: nextBatchAt(row, step.queued, nowMs),
  };
}

/** The answer of a batch its step held: nothing done, the job as it was. */
export function heldBatch(row: ReplayJobRow): ArchiveBatchResult {
  return { job: toReplayJob(row), held: true, queued: 0, nextBatchAtMs: null };
}

/** The answer of a batch that made `progress`, with its job as recorded after it. */
export function recordedBatch(job: ReplayJobRecord | null, progress: ArchiveProgress): ArchiveBatchResult {
  return { job, held: false, queued: progress.queued, nextBatchAtMs: progress.nextBatchAtMs };
}
