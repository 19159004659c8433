import type { FastifyInstance } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import type { ErrorClass } from '../model/attempt.js';
import { callTypes } from '../model/message.js';
import type { Catalog } from '../routing/catalog.js';
import type { DeliveryStatus, DeliveryTypeFilter, Store } from '../store/store.js';
import type { Clock } from '../util/clock.js';
import { refuseUnknownKeys } from './unknown-keys.js';
import { objectBody, optionalChoice, optionalInt, optionalString, optionalTime, pageLimit } from './query-params.js';

/** What the delivery routes need. */
export interface DeliveryRouteDeps {
  store: Store;
  catalog: Catalog;
  clock: Clock;
  /** Called when jobs became due (a replay), so the worker looks at once. */
  onQueued?: () => void;
}

/** Every `ErrorClass` (model/attempt.ts), in the order documented: what `errorClass` filters take. */
export const errorClasses: readonly ErrorClass[] = ['dns', 'connect', 'tls', 'timeout', 'http', 'ssrf', 'invalid_url', 'protocol', 'circuit_open'];

const statuses: readonly DeliveryStatus[] = ['pending', 'succeeded', 'dead'];
/** `type`: a call type, or the kind of the deliveries that have none. */
const types: readonly DeliveryTypeFilter[] = [...callTypes, 'delete', 'audience'];

/** The query parameters of `GET /deliveries`; `GET /dead-letters` takes them all but `status`. */
export const searchParameters = [
  'status',
  'destinationId',
  'sourceId',
  'messageId',
  'userId',
  'anonymousId',
  'event',
  'type',
  'receivedAfter',
  'receivedBefore',
  'after',
  'limit',
] as const;

/**
 * The query parameters of `GET /dead-letters`: the search's but `status`, and the bulk
 * replay's own filters (`errorClass`, the time of death as `since` and `until`), so one filter
 * lists the dead letters that `POST /dead-letters/replay` would take.
 */
export const deadLetterParameters = [...searchParameters.filter((p) => p !== 'status'), 'errorClass', 'since', 'until'] as const;

type SearchQuery = Partial<Record<(typeof deadLetterParameters)[number] | 'status', string>>;

/** A delivery id from a path: anything else names no delivery. */
export function deliveryId(raw: string): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new FerryError('not_found', `no delivery ${raw}`);
  return n;
}

/**
 * A filter naming a destination or source that does not exist is a mistake to report, not a
 * question whose answer is "none".
 */
export function knownIds(catalog: Catalog) {
  return {
    destination(raw: unknown): string | undefined {
      const id = optionalString(raw, 'destinationId');
      if (id !== undefined && !catalog.destination(id)) throw new FerryError('not_found', `no destination ${id}`, 'destinationId');
      return id;
    },
    source(raw: unknown): string | undefined {
      const id = optionalString(raw, 'sourceId');
      if (id !== undefined && !catalog.source(id)) throw new FerryError('not_found', `no source ${id}`, 'sourceId');
      return id;
    },
  };
}

/**
 * Deliveries and dead letters: the search (`GET /deliveries`, `GET /dead-letters`), one
 * delivery with its attempts, the replay of one finished delivery (delivered or dead) and of
 * one dead letter. Bulk replay is in replay-routes.ts.
 */
export async function deliveryRoutes(app: FastifyInstance, deps: DeliveryRouteDeps): Promise<void> {
  const { store, catalog, clock } = deps;
  const known = knownIds(catalog);

  const search = async (query: SearchQuery, status?: DeliveryStatus) => {
    const limit = pageLimit(query.limit);
    const receivedAfterMs = optionalTime(query.receivedAfter, 'receivedAfter');
    const receivedBeforeMs = optionalTime(query.receivedBefore, 'receivedBefore');
    const deadSinceMs = optionalTime(query.since, 'since');
    const deadUntilMs = optionalTime(query.until, 'until');
    if (deadSinceMs !== undefined && deadUntilMs !== undefined && deadUntilMs <= deadSinceMs)
      throw new FerryError('bad_request', 'until must be after since', 'until');
    const deliveries = await store.listDeliveries({
      status: status ?? optionalChoice(query.status, 'status', statuses),
      destinationId: known.destination(query.destinationId),
      sourceId: known.source(query.sourceId),
      messageId: optionalString(query.messageId, 'messageId'),
      userId: optionalString(query.userId, 'userId'),
      anonymousId: optionalString(query.anonymousId, 'anonymousId'),
      event: optionalString(query.event, 'event'),
      type: optionalChoice(query.type, 'type', types),
      receivedAfterMs,
      receivedBeforeMs,
      ...(deadSinceMs === undefined ? {} : { deadSinceMs }),
      ...(deadUntilMs === undefined ? {} : { deadUntilMs }),
      ...(query.errorClass === undefined ? {} : { errorClass: optionalChoice(query.errorClass, 'errorClass', errorClasses) }),
      afterId: optionalInt(query.after, 'after'),
      limit,
    });
    const last = deliveries.at(-1);
    return { deliveries, next: deliveries.length === limit && last ? String(last.id) : null };
  };

  app.get<{ Querystring: SearchQuery }>('/deliveries', { config: { query: searchParameters } }, async (request) => search(request.query));
  app.get<{ Params: { id: string } }>('/deliveries/:id', async (request) => {
    const found = await store.getDelivery(deliveryId(request.params.id));
    if (!found) throw new FerryError('not_found', `no delivery ${request.params.id}`);
    return { ...found.delivery, body: found.body, attempts: found.attempts };
  });
  // Any finished delivery, delivered or dead: a receiver that lost what it was sent asks again.
  app.post<{ Params: { id: string } }>('/deliveries/:id/replay', async (request) => {
    refuseUnknownKeys(objectBody(request.body ?? {}), [], 'key');
    const id = deliveryId(request.params.id);
    const outcome = await store.replayDelivery({ id, destinationIdsIn: catalog.destinations().map((d) => d.id) }, clock.now());
    if (outcome === 'not_found') throw new FerryError('not_found', `no delivery ${request.params.id} of an existing destination`);
    if (outcome === 'pending') throw new FerryError('delivery_not_finished', `delivery ${id} is still pending: it is sent, or retried, without a replay`);
    deps.onQueued?.();
    return { replayed: 1 };
  });
  app.get<{ Querystring: SearchQuery }>('/dead-letters', { config: { query: deadLetterParameters } }, async (request) => search(request.query, 'dead'));
  app.post<{ Params: { id: string } }>('/dead-letters/:id/replay', async (request) => {
    const id = deliveryId(request.params.id);
    const replayed = await store.replay({ ids: [id], destinationIdsIn: catalog.destinations().map((d) => d.id) }, clock.now());
    if (replayed === 0) throw new FerryError('not_found', `no dead letter ${request.params.id} of an existing destination`);
    deps.onQueued?.();
    return { replayed };
  });
}
