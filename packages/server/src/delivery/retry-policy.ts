import type { RetrySettings } from '../config/model.js';
import { redactUrl } from '../util/redact.js';
import type { AttemptOutcome, ErrorClass, ExchangeResult } from '../model/attempt.js';

/**
 * Which failed attempts are worth another try, as data. Every 5xx (the spec retries them),
 * 408 and 429, a timeout, and a connection, DNS or protocol failure are temporary. Any other
 * non-2xx (other 4xx, a 3xx since redirects are not followed), a refused certificate, an
 * address the SSRF guard refuses and an unusable URL will fail the same way again, so they
 * dead-letter at once (docs/delivery.md explains why).
 */
export const retryPolicy = {
  /** Single statuses retried outside the 5xx range. */
  retryableStatuses: [408, 429],
  /** Every status in this range, inclusive, is retried. */
  retryableStatusRange: [500, 599],
  /** Error classes (no response) that are retried. */
  retryableErrorClasses: ['timeout', 'connect', 'dns', 'protocol'],
} as const satisfies { retryableStatuses: readonly number[]; retryableStatusRange: readonly [number, number]; retryableErrorClasses: readonly ErrorClass[] };

/** Whether one URL's result is a temporary failure. */
export function isRetryable(result: ExchangeResult): boolean {
  const status = result.statusCode;
  if (status !== undefined) {
    const [low, high] = retryPolicy.retryableStatusRange;
    return (retryPolicy.retryableStatuses as readonly number[]).includes(status) || (status >= low && status <= high);
  }
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
  const retryable = results.filter(isRetryable);
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
