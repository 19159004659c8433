import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { registerAdminApi } from './admin/admin-api.js';
import { assertStrongAdminToken, hashToken } from './admin/admin-auth.js';
import { AudienceSync } from './audiences/audience-sync.js';
import { defaultHttpServerSettings, type HttpServerSettings } from './config/defaults.js';
import type { FerryConfig } from './config/model.js';
import type { DestinationType } from './destinations/destination-type.js';
import { createHttpSender } from './destinations/http/http-sender.js';
import { createDestinationRegistry } from './destinations/registry.js';
import type { WebhookSender } from './destinations/http/sender.js';
import type { SendGuard } from './delivery/guards.js';
import { DeliveryWorker } from './delivery/worker.js';
import { FerryError } from './errors/error-codes.js';
import { isClientAbort } from './ingest/client-abort.js';
import { limitConnectionsPerAddress } from './ingest/connections-per-address.js';
import { httpLimitsFromEnv } from './ingest/http-limits-from-env.js';
import { ingestRoutes } from './ingest/routes.js';
import { healthRoutes } from './lifecycle/health-routes.js';
import { Lifecycle, type StopOptions } from './lifecycle/lifecycle.js';
import { RegulationRunner } from './regulations/regulation-runner.js';
import { Catalog } from './routing/catalog.js';
import { SqliteStore } from './store/sqlite/sqlite-store.js';
import { isStoreFailure } from './store/store-failure.js';
import type { Store } from './store/store.js';
import { systemClock, type Clock } from './util/clock.js';

/** Everything a Ferry server is built from. Only `config` is required. */
export interface FerryOptions {
  /** The validated configuration (see `loadConfig`); its sources and destinations seed an empty store. */
  config: FerryConfig;
  /** Where the SQLite file lives when no `store` is given. Default `./.ferry`. */
  dataDir?: string;
  /** A ready store (e.g. PostgreSQL); otherwise SQLite in `dataDir`. */
  store?: Store;
  /**
   * The admin API's Bearer token, at least 32 characters (a shorter one is refused). When
   * absent, one is generated, and `generatedAdminToken` holds it.
   */
  adminToken?: string;
  /** Time for delivery decisions, leases and timestamps; tests inject a manual clock. Default: the system clock. */
  clock?: Clock;
  /** Source of retry jitter, in [0, 1). Default `Math.random`. */
  random?: () => number;
  /**
   * Destination types besides the built-in ones (Webhooks), e.g. an application's own. A
   * destination of such a type must come in `config` or through the admin API: the config
   * file is checked against the built-in types.
   */
  destinationTypes?: readonly DestinationType<any>[];
  /** Per-endpoint checks the worker consults before each send (rate limits, circuit breakers). Default none. */
  sendGuards?: readonly SendGuard[];
  /** Transport of webhook requests. Default: the undici sender behind the SSRF guard. */
  sender?: WebhookSender;
  /** Where logs go. Default: pino on stdout at `FERRY_LOG_LEVEL` (info). */
  logger?: Logger;
  /** Extra CA certificates trusted for HTTPS webhooks (besides the system's and NODE_EXTRA_CA_CERTS). */
  ca?: string | Buffer | Array<string | Buffer>;
  /**
   * How often a shared store's sources and destinations are read again, so admin edits made on
   * another node take effect here. Default 5000 ms on PostgreSQL; SQLite has one process.
   */
  catalogRefreshMs?: number;
  /** Limits against slow, idle and greedy clients; defaults in `config/defaults.ts`, over which the environment's are applied. */
  http?: Partial<HttpServerSettings>;
  /** Start the delivery loop with `start()`. Tests that drive the worker by hand turn it off. Default true. */
  deliver?: boolean;
}

/** A running (or ready to run) Ferry server. */
export interface Ferry {
  /** The HTTP server: ingestion, admin API, health. */
  readonly app: FastifyInstance;
  readonly store: Store;
  /** Sources and destinations in force, kept in step with the store. */
  readonly catalog: Catalog;
  readonly worker: DeliveryWorker;
  /** Carries out deletion requests. */
  readonly regulations: RegulationRunner;
  /** Audience and computed-trait sync; undefined on a store with no audience store (neither SQLite nor PostgreSQL). */
  readonly audiences: AudienceSync | undefined;
  readonly logger: Logger;
  /** Set when no token was given and a new one was made; shown once to the operator. */
  readonly generatedAdminToken: string | undefined;
  /** Listens on the port (0: any free one) and starts delivering; resolves with the base URL. */
  start(port: number, host?: string): Promise<string>;
  /**
   * Drains and stops: readiness fails and new requests get 503 at once, attempts and requests
   * in flight finish, held jobs go back to the queue, then the listener and the store close.
   * See {@link StopOptions} for the drain's length.
   */
  stop(options?: StopOptions): Promise<void>;
}

const adminTokenSetting = 'admin_token_sha256';

/**
 * Node's request timeout does not cut off a body that trickles in after the head, so each
 * request with a body gets its own deadline: past it the client is answered 408 and dropped.
 */
function guardBodyDeadline(raw: IncomingMessage, response: ServerResponse, bodyTimeoutMs: number): void {
  const timer = setTimeout(() => {
    // An answer already on its way (say an early 413) is left alone: never a second response.
    if (raw.complete || response.headersSent || raw.socket.destroyed) return;
    const body = JSON.stringify(new FerryError('request_timeout', `the request body was not received within ${bodyTimeoutMs} ms`).toBody());
    raw.socket.end(
      `HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    raw.socket.destroySoon();
  }, bodyTimeoutMs);
  const clear = () => clearTimeout(timer);
  raw.once('end', clear);
  raw.once('close', clear);
  // A request answered before its body was read (a refused key) never ends nor closes itself.
  response.once('close', clear);
}

/** Builds a Ferry server: store, catalog, ingestion and admin HTTP API, delivery worker. */
export async function createFerry(options: FerryOptions): Promise<Ferry> {
  const clock = options.clock ?? systemClock;
  // First, so that a bad limit in the environment stops the start before the store is opened.
  const limits: HttpServerSettings = { ...defaultHttpServerSettings, ...httpLimitsFromEnv(process.env), ...options.http };
  const logger =
    options.logger ??
    pino({
      level: process.env['FERRY_LOG_LEVEL'] || 'info',
      redact: { paths: ['req.headers.authorization', '*.writeKey', '*.sharedSecret', 'headers.authorization'], censor: '[redacted]' },
    });
  const { config } = options;
  const givenToken = options.adminToken?.trim();
  if (givenToken !== undefined) assertStrongAdminToken(givenToken);
  const store = options.store ?? new SqliteStore({ path: join(options.dataDir ?? './.ferry', 'ferry.db') });
  const catalog = new Catalog(store, clock, createDestinationRegistry(options.destinationTypes));
  await catalog.init({ sources: config.sources, destinations: config.destinations });

  let generatedAdminToken: string | undefined;
  let adminTokenHash: Buffer;
  if (givenToken) {
    adminTokenHash = hashToken(givenToken);
    // A token set by the operator retires a generated one (perhaps leaked): unsetting it
    // later makes a new token, never brings the old one back.
    await store.setSetting(adminTokenSetting, '');
  } else {
    const stored = await store.getSetting(adminTokenSetting);
    if (stored) {
      adminTokenHash = Buffer.from(stored, 'hex');
    } else {
      generatedAdminToken = `fat_${randomBytes(24).toString('base64url')}`;
      adminTokenHash = hashToken(generatedAdminToken);
      await store.setSetting(adminTokenSetting, adminTokenHash.toString('hex'));
    }
  }

  const sender =
    options.sender ??
    createHttpSender({
      allowPrivateNetworks: config.network.allowPrivateNetworks,
      allowedNetworks: config.network.allowedNetworks,
      ca: options.ca,
      connectionsPerOrigin: config.delivery.perDestinationConcurrency,
      clock,
    });
  const worker = new DeliveryWorker({ store, catalog, sender, settings: config.delivery, clock, logger, random: options.random, guards: options.sendGuards });
  const wake = () => worker.wake();
  const regulations = new RegulationRunner({ store, catalog, clock, logger, onQueued: wake });
  const audienceStore = store.audiences;
  const audiences = audienceStore
    ? new AudienceSync({ audiences: audienceStore, catalog, clock, logger, settings: config.audiences, onQueued: wake })
    : undefined;

  const app = Fastify({
    logger: false,
    // Slow or idle clients must not hold sockets forever (slowloris); real clients finish far sooner.
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    http: { headersTimeout: limits.headersTimeoutMs, connectionsCheckingInterval: limits.connectionsCheckingIntervalMs },
    bodyLimit: 1024 * 1024,
    // The lifecycle's own 503 answers in the error format while stopping.
    return503OnClosing: false,
    // Behind a reverse proxy, FERRY_TRUST_PROXY=1 takes the client address from X-Forwarded-For (context.ip).
    trustProxy: ['1', 'true', 'yes'].includes((process.env['FERRY_TRUST_PROXY'] ?? '').toLowerCase()),
  });
  app.server.maxConnections = limits.maxConnections;
  limitConnectionsPerAddress(app.server, limits.maxConnectionsPerAddress, logger);
  const lifecycle = new Lifecycle({ app, worker, audiences, regulations, sender, store, onStopping: () => catalog.stopRefreshing() });
  app.addHook('onRequest', lifecycle.refuseWhileDraining);
  app.addHook('onRequest', async (request, reply) => {
    if (!request.raw.complete) guardBodyDeadline(request.raw, reply.raw, limits.bodyTimeoutMs);
  });
  app.setErrorHandler((error: FastifyError | FerryError, request, reply) => {
    if (error instanceof FerryError) return reply.code(error.status).send(error.toBody());
    // A hang-up mid-body also surfaces as ECONNRESET: the client's doing, not an outage. No one is left to read the answer.
    if (isClientAbort(request.raw)) {
      logger.info({ url: request.url }, 'client closed the connection before sending its whole request');
      return reply.code(400).send(new FerryError('bad_request', 'the request ended before its body was complete').toBody());
    }
    if (isStoreFailure(error)) {
      logger.error({ err: error, url: request.url }, 'store unavailable; answered 503');
      return reply.code(503).send(new FerryError('store_unavailable').toBody());
    }
    const status = error.statusCode ?? 500;
    if (status >= 500) {
      logger.error({ err: error, url: request.url }, 'request failed');
      return reply.code(500).send(new FerryError('internal_error').toBody());
    }
    const code =
      status === 413 ? 'payload_too_large' : status === 415 ? 'unsupported_content_type' : status === 408 ? 'request_timeout' : error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError ? 'invalid_json' : 'bad_request';
    return reply.code(status).send(new FerryError(code, error.message).toBody());
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(new FerryError('not_found', `no route ${request.method} ${request.url.split('?')[0]}`).toBody()),
  );
  await healthRoutes(app, { store, logger, draining: () => lifecycle.draining });
  await app.register(async (scope) =>
    ingestRoutes(scope, { store, catalog, clock, logger, onCommitted: wake }, { bodyBudgetBytes: limits.ingestBodyBudgetBytes }),
  );
  await registerAdminApi(app, {
    store,
    catalog,
    clock,
    regulations,
    adminTokenHash,
    onQueued: wake,
    audiences: audienceStore && audiences ? { store: audienceStore, sync: audiences } : undefined,
  });

  return {
    app,
    store,
    catalog,
    worker,
    regulations,
    audiences,
    logger,
    generatedAdminToken,
    async start(port, host = '127.0.0.1') {
      const address = await app.listen({ port, host });
      await regulations.resumePending();
      const refreshMs = options.catalogRefreshMs ?? (store.kind === 'postgres' ? 5000 : 0);
      if (refreshMs > 0) catalog.refreshEvery(refreshMs, logger);
      if (options.deliver !== false) {
        worker.start();
        audiences?.start();
      }
      return address.replace('[::1]', 'localhost');
    },
    stop: (stopOptions) => lifecycle.stop(stopOptions),
  };
}
