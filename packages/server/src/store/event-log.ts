import type { NewDelivery } from './delivery-queue.js';

/** One accepted message and the jobs routed from it, written in one transaction. */
export interface NewEvent {
  sourceId: string;
  messageId: string;
  type: string;
  userId?: string;
  anonymousId?: string;
  /** Track event name; kept in a column for audience rules. */
  event?: string;
  receivedAtMs: number;
  /** The normalised message, serialised once. */
  json: string;
  deliveries: Omit<NewDelivery, 'sourceId' | 'messageId' | 'userId'>[];
}

/** A message refused inside an otherwise accepted batch, kept for operators. */
export interface NewRejection {
  sourceId: string;
  index: number;
  code: string;
  message: string;
}

/** The write of one ingestion request. */
export interface IngestWrite {
  /** When the request was received (rejections are stamped with it). */
  receivedAtMs: number;
  events: NewEvent[];
  rejections: NewRejection[];
  /** Asks for {@link IngestOutcome.stored}: set only while someone watches messages one by one (`GET /sources/{id}/live`). */
  reportStored?: boolean;
}

/** What the write did: duplicates are messages whose (source, messageId) was already stored. */
export interface IngestOutcome {
  inserted: number;
  duplicates: number;
  deliveries: number;
  /**
   * With `reportStored`, one flag per event of the write, in its order: true when it was stored
   * now, false for a duplicate (a messageId repeated within the write is stored once, its
   * first copy). Absent otherwise.
   */
  stored?: boolean[];
}

/** A kept rejection as the admin API shows it. */
export interface RejectionView {
  sourceId: string;
  /** The message's place in its batch. */
  index: number;
  code: string;
  message: string;
  receivedAt: string;
}

/** How many messages of a source were rejected with a code, ever. */
export interface RejectionCount {
  sourceId: string;
  code: string;
  count: number;
}

/**
 * The event log: what ingestion writes (events with their jobs, rejections) and what
 * operators read back of the rejections.
 */
export interface EventLog {
  /** Stores events and their jobs atomically; resolves only once durably committed. */
  ingest(write: IngestWrite): Promise<IngestOutcome>;
  /** The most recent rejections first (the store keeps the last 1,000). */
  listRejections(args: { sourceId?: string; limit: number }): Promise<RejectionView[]>;
  /** Rejections counted per source and code, ordered by both. */
  rejectionCounts(): Promise<RejectionCount[]>;
}
