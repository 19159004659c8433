import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { HttpServerSettings } from '../config/defaults.js';
import { limitConnectionsPerAddress } from './connections-per-address.js';
import { answerWithRequestId, requestIdOf } from './request-id.js';

/** How the HTTP server is built. */
export interface HttpServerOptions {
  limits: HttpServerSettings;
  /** Behind a reverse proxy: the client address (`request.ip`) is read from `X-Forwarded-For`. */
  trustProxy: boolean;
  logger: Logger;
}

/**
 * The Fastify server every route is served by, with the limits against slow, idle and greedy
 * clients: request, head and keep-alive deadlines, a cap on connections overall and per client
 * address. Every answer carries the request's `X-Request-Id`. The body deadline is a hook (`guardBodyDeadlines`), registered after the
 * lifecycle's own.
 */
export function createHttpServer(options: HttpServerOptions): FastifyInstance {
  const { limits } = options;
  const app = Fastify({
    logger: false,
    // Slow or idle clients must not hold sockets forever (slowloris); real clients finish far sooner.
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    http: { headersTimeout: limits.headersTimeoutMs, connectionsCheckingInterval: limits.connectionsCheckingIntervalMs },
    bodyLimit: 1024 * 1024,
    // The lifecycle's own 503 answers in the error format while stopping.
    return503OnClosing: false,
    trustProxy: options.trustProxy,
    // Each request's id (`request.id`): its sane X-Request-Id, or a new one; see request-id.ts.
    requestIdHeader: false,
    genReqId: requestIdOf,
  });
  answerWithRequestId(app);
  app.server.maxConnections = limits.maxConnections;
  limitConnectionsPerAddress(app.server, limits.maxConnectionsPerAddress, options.logger);
  return app;
}
