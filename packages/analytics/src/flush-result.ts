import type { ErrorCode } from './errors.js';

/** A message that will not be delivered, with the reason. */
export interface FailedMessage {
  messageId: string;
  code: ErrorCode;
}

/**
 * What `flush()` or `close()` saw happen to the messages queued when it was called.
 * Nothing is left out: every such message is counted in `delivered`, listed in `failed`, or
 * listed in `unconfirmed`.
 */
export interface FlushResult {
  /** `complete`: every covered message was settled; otherwise the bound that stopped the wait. */
  status: 'complete' | 'timeout' | 'aborted';
  /** Messages the server accepted. */
  delivered: number;
  /** Messages that failed for good (refused, retries exhausted, dropped by overflow). */
  failed: FailedMessage[];
  /**
   * Messages not confirmed when the wait ended. After `flush()` they stay queued and are still
   * sent; after `close()` they are given up (reported with code `unconfirmed`).
   */
  unconfirmed: string[];
}

/** Bounds of a `flush()` or `close()` wait. */
export interface FlushOptions {
  /** Stop waiting after this many milliseconds. */
  timeoutMs?: number;
  /** Same as `timeoutMs` (the name Segment's `closeAndFlush` uses). */
  timeout?: number;
  /** Stop waiting when this signal aborts. */
  signal?: AbortSignal;
}
