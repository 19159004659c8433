import type { ErrorClass } from '../../model/attempt.js';

/**
 * The transport contract between the delivery worker and the HTTP layer: one POST to one
 * URL, whose outcome is always a value (never a thrown error).
 */

/** One POST to one URL. */
export interface SendRequest {
  url: string;
  /** Final header set, already including Content-Type, User-Agent, X-Signature, X-Ferry-Source and static headers. */
  headers: Record<string, string>;
  /** The exact bytes to send. */
  body: Buffer;
  /** The whole exchange up to the response head must finish within this time. */
  timeoutMs: number;
}

/** What happened to one POST. */
export interface SendResult {
  url: string;
  /** When the attempt started, ms since the epoch (from the injected clock). */
  startedAtMs: number;
  latencyMs: number;
  /** Present when a response arrived. */
  statusCode?: number;
  /** Present when the attempt did not end in a 2xx. */
  errorClass?: ErrorClass;
  errorMessage?: string;
  /** The first KB of the response body, decoded as UTF-8 (lossy). */
  responseBody?: string;
  /** From a `Retry-After` header (seconds or HTTP date), in ms from now. */
  retryAfterMs?: number;
}

/** Sends webhook requests; one instance per process, with its own connection pools. */
export interface WebhookSender {
  send(request: SendRequest): Promise<SendResult>;
  close(): Promise<void>;
}
