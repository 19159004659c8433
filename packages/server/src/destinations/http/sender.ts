import type { ExchangeResult } from '../../model/attempt.js';

/**
 * The transport contract between HTTP destination types (Webhooks) and the HTTP layer: one
 * POST to one URL, whose outcome is always a value (never a thrown error).
 */

/** One POST to one URL. */
export interface SendRequest {
  url: string;
  /** Final header set, already including Content-Type, User-Agent, X-Signature, X-Ferry-Source and static headers. */
  headers: Record<string, string>;
  /** The exact bytes to send. */
  body: Buffer;
  /** The whole exchange, the response head and the body Ferry reads included, must finish within this time. */
  timeoutMs: number;
}

/** What happened to one POST. */
export type SendResult = ExchangeResult;

/** Sends webhook requests; one instance per process, with its own connection pools. */
export interface WebhookSender {
  send(request: SendRequest): Promise<SendResult>;
  close(): Promise<void>;
}
