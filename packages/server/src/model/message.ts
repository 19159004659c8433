/**
 * A stored call, as ingestion leaves it and as every destination type renders it. It lives
 * below both, so that ingestion imports no destination and no destination imports ingestion.
 */

/** The six call types the ingestion API accepts. */
export const callTypes = ['identify', 'track', 'page', 'screen', 'group', 'alias'] as const;
export type CallType = (typeof callTypes)[number];

/**
 * One message after validation and enrichment: what the store keeps and what destinations
 * are built from. Unknown top-level fields of the incoming message are kept as they came.
 * All timestamps are ISO 8601 in UTC with milliseconds (`2024-01-02T03:04:05.678Z`).
 */
export interface NormalizedMessage {
  type: CallType;
  messageId: string;
  userId?: string;
  anonymousId?: string;
  /** track */
  event?: string;
  /** page, screen */
  name?: string;
  /** page */
  category?: string;
  /** group */
  groupId?: string;
  /** alias */
  previousId?: string;
  properties?: Record<string, unknown>;
  traits?: Record<string, unknown>;
  context: Record<string, unknown>;
  integrations: Record<string, unknown>;
  /** Skew-corrected: `receivedAt - (sentAt - originalTimestamp)`, or receivedAt when the client sent no timestamp. */
  timestamp: string;
  /** The client's own `timestamp`, normalised, when it sent one. */
  originalTimestamp?: string;
  sentAt?: string;
  receivedAt: string;
  [extra: string]: unknown;
}
