import type { FastifyReply, FastifyRequest } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import type { EventBus } from '../events/event-bus.js';
import type { Catalog } from '../routing/catalog.js';
import type { BodyBudget } from './body-budget.js';
import { ingestLimits, isGzip, writeKeyFromBasicAuth } from './read-body.js';

/** `Retry-After` of a 503 `server_busy`, in seconds: the bodies that fill the budget are usually handled within milliseconds. */
const busyRetryAfterSeconds = 1;

/**
 * The bytes a request's body may occupy while it is handled: its declared length (the raw
 * limit when it declares none or more), plus the decompressed copy of a gzip body.
 */
export function bodyReservationBytes(headers: FastifyRequest['headers']): number {
  const declared = Number(headers['content-length']);
  const raw = Number.isInteger(declared) && declared >= 0 ? Math.min(declared, ingestLimits.maxRawRequestBytes) : ingestLimits.maxRawRequestBytes;
  return isGzip(headers['content-encoding']) ? raw + ingestLimits.maxRequestBytes : raw;
}

/**
 * The `onRequest` hook of the ingestion routes, run on the request head before any of the body
 * is read. A Basic key that no source has is answered 401 at once, so a stranger can make the
 * server hold none of its body; every other request reserves its body's bytes in the
 * process-wide `budget` (given back when its answer is done) or, when they do not fit, is
 * answered 503 `server_busy` with `Retry-After`. Both refusals close the connection, which
 * drops the unread body.
 *
 * A request without a Basic key is admitted to the budget, as its key may be in the body, but
 * such requests together hold at most a quarter of it (`keylessShare`). Each refusal is told
 * to `events` as `ingest:refused`.
 */
export function ingestAdmission(deps: { catalog: Catalog; budget: BodyBudget; events: EventBus }) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const key = writeKeyFromBasicAuth(request.headers.authorization);
    if (key !== undefined && !deps.catalog.sourceByWriteKey(key))
      return refuse(deps.events, request, reply, new FerryError('unauthorized', 'unknown write key'));
    const reservation = deps.budget.tryReserve(bodyReservationBytes(request.headers), { keyless: key === undefined });
    if (!reservation) {
      reply.header('retry-after', String(busyRetryAfterSeconds));
      return refuse(deps.events, request, reply, new FerryError('server_busy'));
    }
    // 'close' comes once, after the answer was sent (so after the request was processed) or
    // when the client went away first.
    reply.raw.once('close', () => reservation.release());
    return undefined;
  };
}

function refuse(events: EventBus, request: FastifyRequest, reply: FastifyReply, error: FerryError): FastifyReply {
  events.emit('ingest:refused', { code: error.code, status: error.status, requestId: request.id });
  return reply.code(error.status).header('connection', 'close').send(error.toBody());
}
