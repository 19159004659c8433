/** Settings of the retry schedule, all in milliseconds. */
export interface RetrySettings {
  /** Retries after the first attempt; 0 disables retrying. */
  maxRetries: number;
  /** Delay before the first retry; doubles with each further retry. */
  retryBaseDelayMs: number;
  /** Ceiling of the exponential delay. */
  retryMaxDelayMs: number;
  /** Ceiling applied to a server's `Retry-After`. */
  retryAfterMaxMs: number;
}

/** What to do with the answer to one attempt. */
export type AttemptVerdict = 'success' | 'retry' | 'fail';

/**
 * Classifies an HTTP status. 2xx succeeds. 408 and 429 are the server asking to try later,
 * and 5xx is the server's own trouble: both are retried. 400 and the other 4xx mean the
 * request itself is wrong, so sending it again cannot help; 3xx is refused too because the
 * client never follows redirects (the body would not be re-posted).
 */
export function classifyStatus(status: number): AttemptVerdict {
  if (status >= 200 && status < 300) return 'success';
  if (status === 408 || status === 429 || status >= 500) return 'retry';
  return 'fail';
}

/**
 * Parses `Retry-After`: delay-seconds or an HTTP date. Undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/**
 * Delay before retry number `retry` (1 for the first retry). Exponential with "equal jitter":
 * half the step is fixed, half random, so clients that failed together do not retry together
 * yet never retry sooner than half the schedule. A server's `Retry-After` replaces the
 * schedule, capped so a misbehaving server cannot park the client for hours.
 */
export function retryDelayMs(retry: number, settings: RetrySettings, random: () => number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, settings.retryAfterMaxMs);
  const step = Math.min(settings.retryMaxDelayMs, settings.retryBaseDelayMs * 2 ** (retry - 1));
  return Math.round(step / 2 + random() * (step / 2));
}
