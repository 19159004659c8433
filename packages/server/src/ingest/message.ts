import type { ErrorCode } from '../errors/error-codes.js';
import type { NormalizedMessage } from '../model/message.js';

/** The batch-level fields merged into each message. */
export interface Envelope {
  sentAt?: string;
  context?: Record<string, unknown>;
  integrations?: Record<string, unknown>;
}

/** Facts about the request that enrichment needs. */
export interface IngestMeta {
  /** Server clock when the request was received, in ms since the epoch. */
  receivedAtMs: number;
  /** The client address, used for `context.ip` when the message has none. */
  ip?: string;
  /** Generates a messageId for messages that have none. */
  newMessageId(): string;
}

/** Outcome of normalising one message: a value, never an exception. */
export type NormalizeResult =
  { ok: true; message: NormalizedMessage; /** JSON of `message`, serialised once. */ json: string } | { ok: false; code: ErrorCode; message: string };
