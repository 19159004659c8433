import type { AttemptRecord, DeadReason, ErrorClass } from '../model/attempt.js';
import type { CallType } from '../model/message.js';
import type { DeliveryKind, DeliveryStatus } from './delivery-queue.js';

/** A delivery as the admin API shows it. */
export interface DeliveryView {
  id: number;
  destinationId: string;
  sourceId: string | null;
  kind: DeliveryKind;
  status: DeliveryStatus;
  messageId: string | null;
  userId: string | null;
  /** The event's `anonymousId`; null when it had none, and for deletion notices and audience changes. */
  anonymousId: string | null;
  /** The event's call type; null for deletion notices and audience changes (see `kind`). */
  type: CallType | null;
  /** The track call's event name; null for other calls and other kinds. */
  event: string | null;
  /** When the event was received; null for deletion notices and audience changes. */
  receivedAt: string | null;
  attemptCount: number;
  createdAt: string;
  firstAttemptAt: string | null;
  nextAttemptAt: string | null;
  completedAt: string | null;
  deadReason: DeadReason | null;
  lastError: string | null;
}

/** One attempt as the admin API shows it: the record, its start as an ISO 8601 string. */
export type AttemptView = Omit<AttemptRecord, 'startedAtMs'> & { startedAt: string };

/** One delivery in full: the body it sends and every attempt logged. */
export interface DeliveryDetail {
  delivery: DeliveryView;
  body: string;
  attempts: AttemptView[];
}

/**
 * What `type` filters on: an event's call type, or `delete` / `audience` for the deliveries
 * of those kinds (which have no call type).
 */
export type DeliveryTypeFilter = CallType | 'delete' | 'audience';

/**
 * Filter of delivery listings, every condition combined with AND. `afterId` pages forward
 * through ids in ascending order. The conditions on the event (`anonymousId`, `event`, a
 * call `type`, the received-at range) match event deliveries only.
 */
export interface DeliveryFilter {
  status?: DeliveryStatus;
  destinationId?: string;
  sourceId?: string;
  messageId?: string;
  userId?: string;
  anonymousId?: string;
  /** A track call's event name. */
  event?: string;
  type?: DeliveryTypeFilter;
  /** Received at or after (ms since the epoch). */
  receivedAfterMs?: number;
  /** Received before (ms since the epoch). */
  receivedBeforeMs?: number;
  /** Dead-lettered at or after (ms since the epoch); with `status: 'dead'` (`GET /dead-letters`). */
  deadSinceMs?: number;
  /** Dead-lettered before (ms since the epoch); with `status: 'dead'`. */
  deadUntilMs?: number;
  /** Whose last attempt failed with this class on one of its URLs, as the bulk replay's filter reads it (`errorClassPatterns`). */
  errorClass?: ErrorClass;
  afterId?: number;
  limit: number;
}

/** What operators read of deliveries: listings and one delivery with its attempt log. */
export interface DeliveryReads {
  listDeliveries(filter: DeliveryFilter): Promise<DeliveryView[]>;
  getDelivery(id: number): Promise<DeliveryDetail | null>;
}
