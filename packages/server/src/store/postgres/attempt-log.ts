import type { AttemptRecord } from '../../model/attempt.js';
import type { AttemptView } from '../delivery-reads.js';
import { iso, storedText, toAttemptView, type AttemptRow } from '../rows.js';

/**
 * One URL of one attempt as the completion statement takes it, and as a delivery's first
 * attempt stays in its row (`first_attempt_log`, a JSON array of these): short keys, since
 * every completion sends them and most rows keep them. The keys are the columns of
 * `attempts` they fill: u url, s started_at, l latency_ms, c status_code, e error_class,
 * m error_message, r response_body, t trigger.
 */
export interface LogEntry {
  u: string;
  s: number;
  l: number;
  c?: number;
  e?: NonNullable<AttemptRecord['errorClass']>;
  m?: string;
  r?: string;
  t: AttemptRecord['trigger'];
}

/**
 * An attempt record as the completion statement takes it, its text made storable. A null is
 * left out (the statement reads a missing key as NULL): a success has three of them, and the
 * row that keeps it has only the room migration 5 leaves.
 */
export function toLogEntry(a: AttemptRecord): LogEntry {
  const entry: LogEntry = { u: storedText(a.url), s: a.startedAtMs, l: a.latencyMs, t: a.trigger };
  if (a.statusCode !== null) entry.c = a.statusCode;
  if (a.errorClass !== null) entry.e = a.errorClass;
  if (a.errorMessage !== null) entry.m = storedText(a.errorMessage);
  if (a.responseBody !== null) entry.r = storedText(a.responseBody);
  return entry;
}

/**
 * A delivery's attempt log: its first attempt kept in its row (if any), then the rows of
 * `attempts` in the order they were written, merged by start time. A worker whose lease had
 * run out logs its attempt as a row, and may do so before the new holder's first attempt is
 * kept inline; the merge puts each where it happened. The sort is stable, so entries that
 * started in the same millisecond keep this order.
 */
export function attemptLog(firstAttemptLog: string | null, rows: AttemptRow[]): AttemptView[] {
  const inline = firstAttemptLog === null ? [] : (JSON.parse(firstAttemptLog) as LogEntry[]).map(fromLogEntry);
  const all = [...inline, ...rows.map(toAttemptView)];
  // ISO 8601 in UTC with milliseconds: text order is time order.
  return inline.length === 0 ? all : all.sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : 0));
}

function fromLogEntry(e: LogEntry): AttemptView {
  return {
    url: e.u,
    startedAt: iso(e.s)!,
    latencyMs: e.l,
    statusCode: e.c ?? null,
    errorClass: e.e ?? null,
    errorMessage: e.m ?? null,
    responseBody: e.r ?? null,
    trigger: e.t,
  };
}
