import { defaultRetryStatuses } from '../config/defaults.js';
import type { DestinationConfig, RetrySettings, RetryStatus } from '../config/model.js';
import { redactUrl } from '../util/redact.js';
import type { AttemptOutcome, ErrorClass, ExchangeResult } from '../model/attempt.js';

/**
 * Which failed attempts are worth another try, as data. By default every 5xx (the spec
 * retries them), 408 and 429; a destination may list its own statuses (`retryStatuses`, e.g.
 * adding 404 for a receiver that answers it during its deploys). A timeout, a connection,
 * DNS or protocol failure, and a URL skipped because its circuit is open are always
 * temporary. Any other status (a 3xx too, since redirects are not followed), a refused
 * certificate, an address the SSRF guard refuses and an unusable URL will fail the same way
 * again, so they dead-letter at once (docs/delivery.md explains why).
 */
export const retryPolicy = {
  /** Single statuses retried outside the 5xx range, by default. */
  retryableStatuses: [408, 429],
  /** Every status in this range, inclusive, is retried by default. */
  retryableStatusRange: [500, 599],
  /** Error classes (no response) that are retried. */
  retryableErrorClasses: ['timeout', 'connect', 'dns', 'protocol', 'circuit_open'],
} as const satisfies { retryableStatuses: readonly number[]; retryableStatusRange: readonly [number, number]; retryableErrorClasses: readonly ErrorClass[] };

/** Which statuses are retried, one flag per status from 0 to 599: built once per list. */
export type RetryableStatuses = Readonly<Uint8Array>;

/** The flags of a `retryStatuses` list (`404`, `"5xx"`...). */
export function retryableStatuses(list: readonly RetryStatus[]): RetryableStatuses {
  const flags = new Uint8Array(600);
  for (const entry of list) {
    if (typeof entry === 'number') flags[entry] = 1;
    else flags.fill(1, Number(entry[0]) * 100, Number(entry[0]) * 100 + 100);
  }
  return flags;
}

/** The statuses retried when a destination lists none of its own. */
export const defaultRetryable: RetryableStatuses = retryableStatuses(defaultRetryStatuses);

/** The flags of each destination's list, built at its first attempt (a changed destination is a new object, so a new list). */
const byList = new WeakMap<readonly RetryStatus[], RetryableStatuses>();

/** The statuses `destination` retries. */
export function retryableOf(destination: Pick<DestinationConfig, 'retryStatuses'>): RetryableStatuses {
  const list = destination.retryStatuses;
  if (list === undefined) return defaultRetryable;
  let flags = byList.get(list);
  if (!flags) byList.set(list, (flags = retryableStatuses(list)));
  return flags;
}

/** Whether one URL's result is a temporary failure, with the statuses a destination retries (default 408, 429, 5xx). */
export function isRetryable(result: ExchangeResult, statuses: RetryableStatuses = defaultRetryable): boolean {
  const status = result.statusCode;
  if (status !== undefined) return status >= 0 && status < 600 && statuses[status] === 1;
  return result.errorClass !== undefined && (retryPolicy.retryableErrorClasses as readonly ErrorClass[]).includes(result.errorClass);
}

/** Whether one URL's result is a success. */
export function isSuccess(result: ExchangeResult): boolean {
  return result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
}

/**
 * Delay before retry number `retry` (1 for the first retry), before jitter:
 * initialDelayMs × multiplier^(retry−1), capped at maxDelayMs.
 */
export function baseDelayMs(settings: RetrySettings, retry: number): number {
  const raw = settings.initialDelayMs * Math.pow(settings.multiplier, Math.max(0, retry - 1));
  return Math.min(settings.maxDelayMs, raw);
}

/** Spreads a delay uniformly by ±jitter; `random` returns [0, 1). */
export function withJitter(delayMs: number, jitter: number, random: () => number): number {
  return Math.max(0, Math.round(delayMs * (1 - jitter + 2 * jitter * random())));
}

/** One line describing a result, for `last_error` and logs; a token in the URL's query is hidden. */
export function describeResult(result: ExchangeResult): string {
  const what =
    result.statusCode !== undefined ? `HTTP ${result.statusCode}` : `${result.errorClass ?? 'error'}${result.errorMessage ? `: ${result.errorMessage}` : ''}`;
  return `${redactUrl(result.url)} -> ${what}`;
}

/** Inputs of {@link decideOutcome}. */
export interface DecisionInput {
  results: ExchangeResult[];
  /** How many attempts had been made before this one. */
  previousAttempts: number;
  /** Start of the retry window (the first attempt's start). */
  firstAttemptAtMs: number;
  nowMs: number;
  settings: RetrySettings;
  random: () => number;
  /** The statuses the destination retries; default 408, 429 and 5xx. */
  retryable?: RetryableStatuses;
}

/**
 * What happens after one attempt to every URL of a destination: any 2xx ends the event;
 * otherwise a temporary failure on any URL schedules a retry (never past the window's end,
 * with a last attempt at the end itself), and only permanent failures dead-letter at once.
 */
export function decideOutcome(input: DecisionInput): AttemptOutcome {
  const { results, settings } = input;
  if (results.some(isSuccess)) return { status: 'succeeded' };
  const lastError = results.map(describeResult).join('; ');
  const statuses = input.retryable ?? defaultRetryable;
  const retryable = results.filter((r) => isRetryable(r, statuses));
  if (retryable.length === 0) return { status: 'dead', reason: 'non_retryable_response', lastError };

  const windowEndsAtMs = input.firstAttemptAtMs + settings.windowMs;
  if (input.nowMs >= windowEndsAtMs) return { status: 'dead', reason: 'retry_window_exhausted', lastError };

  let delayMs = withJitter(baseDelayMs(settings, input.previousAttempts + 1), settings.jitter, input.random);
  // A receiver that asks for time (429/503 Retry-After) gets it, up to a cap, never less than our own backoff.
  const hints = retryable.map((r) => r.retryAfterMs).filter((v): v is number => v !== undefined);
  if (hints.length > 0) delayMs = Math.max(delayMs, Math.min(Math.max(...hints), settings.maxRetryAfterMs));
  const nextAttemptAtMs = Math.min(input.nowMs + delayMs, windowEndsAtMs);
  return { status: 'pending', nextAttemptAtMs, lastError };
}
