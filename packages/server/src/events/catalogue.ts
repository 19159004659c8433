import type { AutoDisabledNotice } from '../delivery/auto-disable.js';
import type { DeliveryEvents } from '../delivery/worker.js';
import type { ErrorCode } from '../errors/error-codes.js';

/** What one refused message of an accepted request was refused for. */
export interface RejectedMessage {
  /** Its place in its batch. */
  index: number;
  code: ErrorCode;
}

/**
 * Everything that happens in Ferry that another part may want to know of (logs, metrics, the
 * dashboard's live views), by name, each with its payload. Names are `noun:verb`. The bus
 * ({@link EventBus}) is typed by this map, so an event cannot be emitted or heard with a
 * payload of the wrong shape.
 */
export interface FerryEvents {
  /** Ingestion committed a request's messages (`ingest/`). `count` new events, `duplicates` already stored. */
  'ingest:accepted': { sourceId: string; count: number; duplicates: number };
  /**
   * Some messages of an otherwise accepted request were refused, one entry each (`ingest/`);
   * nothing of them was stored. `requestId`: the HTTP request's `X-Request-Id`.
   */
  'ingest:rejected': { sourceId: string; rejected: RejectedMessage[]; requestId?: string };
  /**
   * A whole ingestion request was refused and nothing stored (`ingest/`). `sourceId` once the
   * write key was known; `error` when the store failed (`store_unavailable`); `requestId`: the
   * HTTP request's `X-Request-Id`.
   */
  'ingest:refused': { code: ErrorCode; status: number; sourceId?: string; error?: unknown; requestId?: string };
  /**
   * Destinations' filters dropped calls of a committed request (`ingest/`): per destination, how
   * many, no job made for them. A batch sent again is routed, and counted, again.
   */
  'ingest:filtered': { sourceId: string; filtered: { destinationId: string; count: number }[] };
  /**
   * One message of a source stored now, not a duplicate (`ingest/`), with the destinations a
   * delivery was made for and those whose filter dropped it. Emitted only for a source a
   * `GET /sources/{id}/live` stream watches (`ingest/watched-sources.ts`), whoever else
   * listens: every other source's ingestion pays nothing for it. `json` is the normalised
   * message exactly as stored.
   */
  'ingest:message': { sourceId: string; receivedAtMs: number; json: string; routedTo: string[]; filtered: string[] };
  /** A deletion request was carried out (`regulations/`); counts only, never a user id. */
  'regulation:done': { regulationId: string; eventsDeleted: number; deliveriesDeleted: number; notices: number };
  /** An audience sync finished, with or without changes (`audiences/`). */
  'audience:synced': { audienceId: string; syncCount: number; added: number; removed: number; changed: number; queued: number };
  /** The readiness check found the store unavailable, once per outage (`lifecycle/health-routes.ts`). */
  'store:unavailable': { error: unknown };
  /** The readiness check found the store serving again after an outage (`lifecycle/health-routes.ts`). */
  'store:ready': Record<string, never>;
  /** A stop began: readiness fails and new requests get 503 from now on (`lifecycle/`). */
  'lifecycle:draining': { drainMs: number };
  /** A stop finished: every step of it ran, the closing of the listener, the sender and the store included, failed or not (`lifecycle/`). */
  'lifecycle:stopped': Record<string, never>;
  /** The worker's own events (`delivery/worker.ts`), forwarded as they are by the composition root. */
  'delivery:attempted': DeliveryEvents['delivery:attempted'][0];
  'delivery:succeeded': DeliveryEvents['delivery:succeeded'][0];
  'delivery:retrying': DeliveryEvents['delivery:retrying'][0];
  'delivery:dead': DeliveryEvents['delivery:dead'][0];
  'delivery:lease-lost': DeliveryEvents['delivery:lease-lost'][0];
  'worker:error': DeliveryEvents['worker:error'][0];
  /** A URL's circuit breaker opened, let its probe go, or closed (`delivery/circuit-breaker.ts`), forwarded from the worker. */
  'breaker:opened': DeliveryEvents['breaker:opened'][0];
  'breaker:half-open': DeliveryEvents['breaker:half-open'][0];
  'breaker:closed': DeliveryEvents['breaker:closed'][0];
  /** A destination's rate limit held its sends until `untilMs` (`delivery/rate-limit.ts`); its jobs wait unsent. */
  'delivery:rate-limited': { destinationId: string; untilMs: number };
  /** Ferry disabled a destination that failed without a single success for its `autoDisableAfterMs` (`delivery/auto-disable.ts`). */
  'destination:auto-disabled': AutoDisabledNotice;
}

/** The name of an event of the catalogue. */
export type FerryEventName = keyof FerryEvents;
