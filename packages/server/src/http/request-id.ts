import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

/** The header a request's id comes in and every answer carries it back in. */
export const requestIdHeader = 'x-request-id';

/**
 * An id a client (or a proxy in front) may choose: 1 to 128 letters, digits and `._:-`. Anything
 * else (too long, spaces, control characters, several headers) is replaced, so that a log
 * line can never be forged or blown up through it.
 */
const saneRequestId = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Fastify's `genReqId`: the request's own `X-Request-Id` when it is sane, a new UUID otherwise.
 * Fastify reads no header itself (`requestIdHeader: false`): it would take any value.
 */
export function requestIdOf(request: IncomingMessage): string {
  const given = request.headers[requestIdHeader];
  return typeof given === 'string' && saneRequestId.test(given) ? given : randomUUID();
}

/**
 * Every answer carries its request's id, errors and refusals included: the first hook of all,
 * so a hook that refuses later (the drain, the admin token) answers with it.
 */
export function answerWithRequestId(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    reply.header(requestIdHeader, request.id);
  });
}
