import { AbortSwitch } from './abort-switch.js';
import { type Batch, batchBody } from './batch.js';
import type { Clock } from './clock.js';
import { AnalyticsError } from './errors.js';
import { classifyStatus, parseRetryAfter, type RetrySettings, retryDelayMs } from './retry-policy.js';
import { type HookedRequest, onAbortKey } from './transport/abort-hook.js';
import type { Transport } from './transport/transport.js';

/** A message the server refused inside an accepted batch (Ferry's `rejected` list). */
export interface RejectedItem {
  index: number;
  code: string;
  message: string;
}

/** How sending one batch ended: a value, never an exception. */
export type DeliveryOutcome =
  | { kind: 'delivered'; attempts: number; status: number; rejected: RejectedItem[] }
  | { kind: 'failed'; attempts: number; error: AnalyticsError }
  | { kind: 'aborted'; attempts: number };

/** A retry about to happen, reported before the wait. */
export interface RetryNotice {
  /** The retry's number: 1 for the first retry. */
  retry: number;
  delayMs: number;
  /** HTTP status of the failed attempt, or undefined for a network error or timeout. */
  status: number | undefined;
  reason: string;
}

/** Everything one delivery needs, fixed for the client's life. */
export interface DeliveryContext {
  url: string;
  headers: Record<string, string>;
  transport: Transport;
  clock: Clock;
  random: () => number;
  retry: RetrySettings;
  requestTimeoutMs: number;
  /** Compresses the body when gzip is on. */
  compress: ((body: string) => Promise<Uint8Array>) | undefined;
}

function abortableSleep(clock: Clock, ms: number, stop: AbortSwitch): Promise<void> {
  return new Promise((resolve) => {
    if (stop.aborted) return resolve();
    const done = () => {
      clock.clearTimeout(timer);
      stopFollowing();
      resolve();
    };
    const timer = clock.setTimeout(done, ms);
    const stopFollowing = stop.onAbort(done);
  });
}

function parseRejected(body: string): RejectedItem[] {
  // Cheap test first: Segment-style servers answer `{}` or `{"success":true}`.
  if (!body.includes('"rejected"')) return [];
  try {
    const parsed = JSON.parse(body) as { rejected?: unknown };
    if (!Array.isArray(parsed.rejected)) return [];
    return parsed.rejected.filter((r): r is RejectedItem => typeof r === 'object' && r !== null && Number.isInteger((r as RejectedItem).index));
  } catch {
    return [];
  }
}

type Attempt =
  | { verdict: 'success'; status: number; body: string }
  | { verdict: 'retry' | 'fail'; status: number | undefined; retryAfterMs: number | undefined; reason: string };

async function attemptOnce(ctx: DeliveryContext, batch: Batch, stop: AbortSwitch): Promise<Attempt> {
  const text = batchBody(batch, new Date(ctx.clock.now()));
  const body = ctx.compress ? await ctx.compress(text) : text;
  const abort = new AbortSwitch();
  let timedOut = false;
  const timer = ctx.clock.setTimeout(() => {
    timedOut = true;
    abort.abort();
  }, ctx.requestTimeoutMs);
  const stopFollowing = stop.onAbort(() => abort.abort());
  const request: HookedRequest = {
    url: ctx.url,
    method: 'POST',
    headers: ctx.headers,
    body,
    get signal() {
      return abort.signal;
    },
    [onAbortKey]: (fn) => abort.onAbort(fn),
  };
  try {
    const res = await ctx.transport.send(request);
    const verdict = classifyStatus(res.status);
    if (verdict === 'success') return { verdict, status: res.status, body: res.body };
    return {
      verdict,
      status: res.status,
      retryAfterMs: parseRetryAfter(res.headers['retry-after'], ctx.clock.now()),
      reason: `HTTP ${res.status}${res.body ? `: ${res.body.slice(0, 200)}` : ''}`,
    };
  } catch (error) {
    const reason = timedOut ? `timed out after ${ctx.requestTimeoutMs} ms` : `network error: ${String(error)}`;
    return { verdict: 'retry', status: undefined, retryAfterMs: undefined, reason };
  } finally {
    ctx.clock.clearTimeout(timer);
    stopFollowing();
  }
}

/**
 * Sends one batch until it succeeds, fails for good or `stop` aborts. Every attempt resends
 * the same messages with the same messageIds (only `sentAt` is refreshed), so the server's
 * idempotency makes a retry after a lost answer harmless.
 */
export async function deliverBatch(ctx: DeliveryContext, batch: Batch, stop: AbortSwitch, onRetry: (notice: RetryNotice) => void): Promise<DeliveryOutcome> {
  for (let attempts = 1; ; attempts++) {
    if (stop.aborted) return { kind: 'aborted', attempts: attempts - 1 };
    const result = await attemptOnce(ctx, batch, stop);
    if (result.verdict === 'success') {
      return { kind: 'delivered', attempts, status: result.status, rejected: parseRejected(result.body) };
    }
    if (stop.aborted) return { kind: 'aborted', attempts };
    if (result.verdict === 'fail') {
      const error = new AnalyticsError('rejected_by_server', `The server refused the batch: ${result.reason}`, {
        ...(result.status === undefined ? {} : { status: result.status }),
      });
      return { kind: 'failed', attempts, error };
    }
    if (attempts > ctx.retry.maxRetries) {
      const error = new AnalyticsError(
        'retries_exhausted',
        `Gave up after ${attempts} attempts; last: ${result.reason}`,
        result.status === undefined ? {} : { status: result.status },
      );
      return { kind: 'failed', attempts, error };
    }
    const delayMs = retryDelayMs(attempts, ctx.retry, ctx.random, result.retryAfterMs);
    onRetry({ retry: attempts, delayMs, status: result.status, reason: result.reason });
    await abortableSleep(ctx.clock, delayMs, stop);
  }
}
