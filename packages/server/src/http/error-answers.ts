import type { FastifyError, FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { FerryError, type ErrorCode } from '../errors/error-codes.js';
import { adminPrefix } from '../admin/admin-api.js';
import { isClientAbort } from './client-abort.js';
import { notFound } from './not-found.js';

/** What the error answers need to know. */
export interface ErrorAnswerDeps {
  logger: Logger;
  /** Whether an error means the store is unavailable (503) rather than a fault of Ferry's (500): the store's own `isUnavailable`. */
  isStoreUnavailable(error: unknown): boolean;
  /**
   * The admin API answers on another listener: its paths are unknown here, answered 404 on
   * their head like any other. Default false.
   */
  adminElsewhere?: boolean;
}

/**
 * Answers every error a route throws, and every unknown path, in Ferry's error format with
 * a stable code: a `FerryError` as it says; a client that hung up mid-body 400; the store
 * unavailable 503; Fastify's own refusals (413, 415, 408, bad JSON) with their codes; any
 * other failure 500 `internal_error`, logged, its message never shown. An unknown path outside
 * `/admin` is answered 404 on its head, before any of its body is read.
 */
export function answerErrors(app: FastifyInstance, deps: ErrorAnswerDeps): void {
  const { logger } = deps;
  app.setErrorHandler((error: FastifyError | FerryError, request, reply) => {
    if (error instanceof FerryError) return reply.code(error.status).send(error.toBody());
    // A hang-up mid-body also surfaces as ECONNRESET: the client's doing, not an outage. No one is left to read the answer.
    if (isClientAbort(request.raw)) {
      logger.info({ reqId: request.id, url: request.url }, 'client closed the connection before sending its whole request');
      return reply.code(400).send(new FerryError('bad_request', 'the request ended before its body was complete').toBody());
    }
    if (deps.isStoreUnavailable(error)) {
      logger.error({ reqId: request.id, err: error, url: request.url }, 'store unavailable; answered 503');
      return reply.code(503).send(new FerryError('store_unavailable').toBody());
    }
    const status = error.statusCode ?? 500;
    if (status >= 500) {
      logger.error({ reqId: request.id, err: error, url: request.url }, 'request failed');
      return reply.code(500).send(new FerryError('internal_error').toBody());
    }
    return reply.code(status).send(new FerryError(clientErrorCode(status, error), error.message).toBody());
  });
  // Fastify reads the body of an unmatched request (up to its 1 MiB limit) before the
  // not-found handler runs, with no key check and no budget: answered here, on the head, the
  // body is never read, and closing the connection drops it. Paths under the admin prefix go
  // to the admin scope's own not-found handler, after its token check.
  const adminHere = deps.adminElsewhere !== true;
  app.addHook('onRequest', async (request, reply) => {
    if (!request.is404 || (adminHere && isAdminPath(request.url))) return undefined;
    return reply.code(404).header('connection', 'close').send(notFound(request.method, request.url).toBody());
  });
  app.setNotFoundHandler((request, reply) => reply.code(404).send(notFound(request.method, request.url).toBody()));
}

function isAdminPath(url: string): boolean {
  const path = url.split('?')[0]!;
  return path === adminPrefix || path.startsWith(`${adminPrefix}/`);
}

/** The code of a 4xx Fastify raised itself. */
function clientErrorCode(status: number, error: FastifyError): ErrorCode {
  if (status === 413) return 'payload_too_large';
  if (status === 415) return 'unsupported_content_type';
  if (status === 408) return 'request_timeout';
  if (error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError) return 'invalid_json';
  return 'bad_request';
}
