import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { FerryError } from '../errors/error-codes.js';

/**
 * Gives each request whose body is still on its way a deadline of `bodyTimeoutMs`: Node's
 * request timeout does not cut off a body that trickles in after the head, so past the
 * deadline the client is answered 408 `request_timeout` on the raw socket and dropped.
 */
export function guardBodyDeadlines(app: FastifyInstance, bodyTimeoutMs: number): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!request.raw.complete) guardBodyDeadline(request.raw, reply.raw, bodyTimeoutMs, request.id);
  });
}

function guardBodyDeadline(raw: IncomingMessage, response: ServerResponse, bodyTimeoutMs: number, requestId: string): void {
  const timer = setTimeout(() => {
    // An answer already on its way (say an early 413) is left alone: never a second response.
    if (raw.complete || response.headersSent || raw.socket.destroyed) return;
    const body = JSON.stringify(new FerryError('request_timeout', `the request body was not received within ${bodyTimeoutMs} ms`).toBody());
    raw.socket.end(
      `HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nX-Request-Id: ${requestId}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    raw.socket.destroySoon();
  }, bodyTimeoutMs);
  const clear = () => clearTimeout(timer);
  raw.once('end', clear);
  raw.once('close', clear);
  // A request answered before its body was read (a refused key) never ends nor closes itself.
  response.once('close', clear);
}
