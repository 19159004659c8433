import type { DeadReason } from '../model/attempt.js';
import type { ClaimedDelivery, ReplayFilter } from './delivery-queue.js';
import type { ArchiveFilter, ReplayJobRecord } from './replay-jobs-store.js';
import type { AttemptView, DeliveryView } from './delivery-reads.js';
import type { RejectionView } from './event-log.js';
import type { LinkedIdentitiesReport, Regulation } from './regulations-store.js';

/**
 * Row shapes shared by the SQL stores (both use the same column names) and their mapping to
 * the views the admin API shows. Times are stored as integer milliseconds since the epoch.
 */

/** ms since the epoch to ISO 8601, keeping null. */
export const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** A row of `deliveries` as both stores read it (without the body), with its event's columns (null without one). */
export interface DeliveryRow {
  id: number;
  destination_id: string;
  source_id: string | null;
  kind: DeliveryView['kind'];
  status: DeliveryView['status'];
  message_id: string | null;
  user_id: string | null;
  anonymous_id: string | null;
  call_type: DeliveryView['type'];
  event: string | null;
  received_at: number | null;
  attempt_count: number;
  created_at: number;
  first_attempt_at: number | null;
  next_attempt_at: number;
  completed_at: number | null;
  dead_reason: DeadReason | null;
  last_error: string | null;
}

/** A row of `regulations`; user and source ids are JSON arrays in text, the plan JSON too. */
export interface RegulationRow {
  id: string;
  user_ids: string;
  user_count: number;
  source_ids: string | null;
  plan: string | null;
  linked_identities: string | null;
  status: Regulation['status'];
  created_at: number;
  finished_at: number | null;
  events_deleted: number;
  deliveries_deleted: number;
  notifications_queued: number;
}

/** A row of `attempts`: one URL of one attempt. */
export interface AttemptRow {
  url: string;
  started_at: number;
  latency_ms: number;
  status_code: number | null;
  error_class: AttemptView['errorClass'];
  error_message: string | null;
  response_body: string | null;
  trigger: AttemptView['trigger'];
}

/**
 * The columns a claim reads per job, enough to send it and to record its outcome, in the
 * order of {@link ClaimTuple}. Stores read them as raw rows (arrays): the drivers build an
 * object per row through slow generic paths, and the worker needs one object anyway.
 */
export const claimColumns = 'id, destination_id, kind, body, message_id, user_id, attempt_count, first_attempt_at, trigger, created_at, source_id';

/** One claimed row as an array of {@link claimColumns}; a store may read more columns after them. */
export type ClaimTuple = readonly [
  id: number,
  destinationId: string,
  kind: DeliveryView['kind'],
  body: string,
  messageId: string | null,
  userId: string | null,
  attemptCount: number,
  firstAttemptAt: number | null,
  trigger: AttemptView['trigger'],
  createdAt: number,
  sourceId: string | null,
  ...rest: unknown[],
];

/** A row of `rejections`. */
export interface RejectionRow {
  source_id: string;
  batch_index: number;
  code: string;
  message: string;
  received_at: number;
}

/**
 * The columns of a delivery's event that its view shows, from `events e` (LEFT JOINed on
 * `e.id = d.event_id`), named as {@link DeliveryRow} names them.
 */
export const deliveryEventColumns = 'e.anonymous_id, e.type AS call_type, e.event, e.received_at';

/** A row of `replay_jobs`; the filter is JSON text. */
export interface ReplayJobRow {
  id: string;
  kind: ReplayJobRecord['kind'];
  filter: string;
  status: ReplayJobRecord['status'];
  total: number;
  replayed: number;
  skipped: number;
  cursor: number;
  cursor_at: number | null;
  /** Archive jobs with a rate: no batch before this time (ms), on any node. */
  next_batch_at: number | null;
  created_at: number;
  finished_at: number | null;
  error: string | null;
}

/** A `replay_jobs` row as a record. */
export function toReplayJob(r: ReplayJobRow): ReplayJobRecord {
  const common = {
    id: r.id,
    status: r.status,
    total: Number(r.total),
    replayed: Number(r.replayed),
    skipped: Number(r.skipped),
    cursor: { receivedAtMs: r.cursor_at === null ? null : Number(r.cursor_at), id: Number(r.cursor) },
    createdAtMs: Number(r.created_at),
    finishedAtMs: r.finished_at === null ? null : Number(r.finished_at),
    error: r.error,
  };
  return r.kind === 'archive'
    ? { ...common, kind: 'archive', filter: JSON.parse(r.filter) as ArchiveFilter }
    : { ...common, kind: 'dead_letters', filter: JSON.parse(r.filter) as ReplayFilter };
}

/** A kept rejection as the admin API shows it. */
export function toRejectionView(r: RejectionRow): RejectionView {
  return { sourceId: r.source_id, index: r.batch_index, code: r.code, message: r.message, receivedAt: iso(r.received_at)! };
}

/** A delivery as the admin API shows it: camelCase, times in ISO 8601. */
export function toDeliveryView(r: DeliveryRow): DeliveryView {
  return {
    id: r.id,
    destinationId: r.destination_id,
    sourceId: r.source_id,
    kind: r.kind,
    status: r.status,
    messageId: r.message_id,
    userId: r.user_id,
    anonymousId: r.anonymous_id,
    type: r.call_type,
    event: r.event,
    receivedAt: iso(r.received_at),
    attemptCount: r.attempt_count,
    createdAt: iso(r.created_at)!,
    firstAttemptAt: iso(r.first_attempt_at),
    nextAttemptAt: r.status === 'pending' ? iso(r.next_attempt_at) : null,
    completedAt: iso(r.completed_at),
    deadReason: r.dead_reason,
    lastError: r.last_error,
  };
}

/** A deletion request as the admin API shows it, its id lists parsed. */
export function toRegulation(r: RegulationRow): Regulation {
  return {
    id: r.id,
    userIds: JSON.parse(r.user_ids) as string[],
    userCount: r.user_count,
    sourceIds: r.source_ids === null ? null : (JSON.parse(r.source_ids) as string[]),
    status: r.status,
    createdAt: iso(r.created_at)!,
    finishedAt: iso(r.finished_at),
    eventsDeleted: r.events_deleted,
    deliveriesDeleted: r.deliveries_deleted,
    notificationsQueued: r.notifications_queued,
    linkedIdentities: r.linked_identities === null ? null : (JSON.parse(r.linked_identities) as LinkedIdentitiesReport),
  };
}

/** One logged attempt as the admin API shows it. */
export function toAttemptView(a: AttemptRow): AttemptView {
  return {
    url: a.url,
    startedAt: iso(a.started_at)!,
    latencyMs: a.latency_ms,
    statusCode: a.status_code,
    errorClass: a.error_class,
    errorMessage: a.error_message,
    responseBody: a.response_body,
    trigger: a.trigger,
  };
}

/** A claimed job as the delivery worker takes it. */
export function toClaimed(r: ClaimTuple): ClaimedDelivery {
  return {
    id: r[0],
    destinationId: r[1],
    kind: r[2],
    body: r[3],
    messageId: r[4],
    userId: r[5],
    attemptCount: r[6],
    firstAttemptAtMs: r[7],
    trigger: r[8],
    createdAtMs: r[9],
    sourceId: r[10],
  };
}

/** How many recent rejections are kept for operators; counts are kept forever. */
export const keptRejections = 1000;

/** ES2024 string methods, present in Node 20 but not in the ES2023 library this project compiles against. */
interface WellFormedString {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/**
 * Text of an outcome (a response body, an error message) as both stores keep it, the same on
 * each: a NUL and a lone surrogate (a string that is not well-formed Unicode) become U+FFFD.
 * PostgreSQL text cannot hold a NUL and refuses the escape JSON gives a lone surrogate;
 * SQLite would keep a lone surrogate as bytes that read back as three replacement characters.
 */
export function storedText<T extends string | null>(text: T): T {
  if (text === null) return text;
  const s = text as unknown as WellFormedString;
  const wellFormed = s.isWellFormed() ? text : s.toWellFormed();
  return (wellFormed.includes('\u0000') ? wellFormed.replaceAll('\u0000', '\uFFFD') : wellFormed) as T;
}
