import type { AttemptRecord, DeadReason } from '../model/attempt.js';
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

/** Filter of delivery listings. `afterId` pages forward through ids in ascending order. */
export interface DeliveryFilter {
  status?: DeliveryStatus;
  destinationId?: string;
  sourceId?: string;
  messageId?: string;
  afterId?: number;
  limit: number;
}

/** What operators read of deliveries: listings and one delivery with its attempt log. */
export interface DeliveryReads {
  listDeliveries(filter: DeliveryFilter): Promise<DeliveryView[]>;
  getDelivery(id: number): Promise<DeliveryDetail | null>;
}
