import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino, { type LevelWithSilent, type Logger } from 'pino';
import { registerAdminApi } from './admin/admin-api.js';
import { assertStrongAdminToken } from './admin/admin-auth.js';
import { adminTokenInForce } from './admin/admin-token.js';
import { AdminTokens, defaultTokenCacheMs } from './admin/admin-tokens.js';
import { AudienceSync } from './audiences/audience-sync.js';
import { applyIfChanged } from './control/catalog-apply.js';
import { defaultHttpServerSettings, defaultProcessSettings, type HttpServerSettings } from './config/defaults.js';
import type { FerryConfig } from './config/model.js';
import type { AnyDestinationType } from './destinations/destination-type.js';
import { createHttpSender } from './destinations/http/http-sender.js';
import { createDestinationRegistry } from './destinations/registry.js';
import type { WebhookSender } from './destinations/http/sender.js';
import { AutoDisable } from './delivery/auto-disable.js';
import { allTallies } from './delivery/delivery-tally.js';
import type { SendGuard } from './delivery/guards.js';
import { RateLimitGuard } from './delivery/rate-limit.js';
import { DeliveryWorker } from './delivery/worker.js';
import { EventBus } from './events/event-bus.js';
import { forwardWorkerEvents } from './events/worker-events.js';
import { logEvents } from './events/log-subscriber.js';
import { guardBodyDeadlines } from './http/body-deadline.js';
import { answerErrors } from './http/error-answers.js';
import { createHttpServer } from './http/http-server.js';
import { BodyBudget } from './ingest/body-budget.js';
import { ingestRoutes } from './ingest/routes.js';
import { WatchedSources } from './ingest/watched-sources.js';
import { healthRoutes } from './lifecycle/health-routes.js';
import { Lifecycle, type StopOptions } from './lifecycle/lifecycle.js';
import { ActivitySeries } from './metrics/activity-series.js';
import { FerryMetrics } from './metrics/ferry-metrics.js';
import { metricsRoutes } from './metrics/metrics-routes.js';
import { dashboardRoutes } from './dashboard/dashboard-routes.js';
import { RegulationRunner } from './regulations/regulation-runner.js';
import { defaultReplaySettings, ReplayJobRunner, type ReplaySettings } from './replay/replay-job-runner.js';
import { RetentionPruner } from './retention/pruner.js';
import { applyRetentionIfChanged } from './retention/retention-apply.js';
import { Catalog } from './routing/catalog.js';
import { SqliteStore } from './store/sqlite/sqlite-store.js';
import type { Store } from './store/store.js';
import { systemClock, timersOf, type Clock } from './util/clock.js';

/** Everything a Ferry server is built from. Only `config` is required. */
export interface FerryOptions {
  /**
   * The validated configuration (see `loadConfig`). Its sources and destinations are applied to
   * the store when they differ from the last configuration applied (`control/catalog-apply.ts`).
   */
  config: FerryConfig;
  /** Where the SQLite file lives when no `store` is given. Default `./.ferry`. */
  dataDir?: string;
  /**
   * This node's id, the same across restarts (`ferry serve`: `FERRY_NODE_ID`, else the
   * `node-id` file of the data directory): the owner of its delivery leases, so that a start
   * after a crash hands back at once the jobs the crashed run held. Default: a random one.
   */
  nodeId?: string;
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
  destinationTypes?: readonly AnyDestinationType[];
  /** Per-endpoint checks the worker consults before each send (circuit breakers...), after the destinations' rate limits. Default none. */
  sendGuards?: readonly SendGuard[];
  /** Transport of webhook requests. Default: the undici sender behind the SSRF guard. */
  sender?: WebhookSender;
  /** Where logs go. Default: pino on stdout at `logLevel`. */
  logger?: Logger;
  /** The level of the default logger (`ferry serve`: `FERRY_LOG_LEVEL`). Default `info`. */
  logLevel?: LevelWithSilent;
  /** Behind a reverse proxy: the client address (`context.ip`) is read from `X-Forwarded-For` (`ferry serve`: `FERRY_TRUST_PROXY`). Default false. */
  trustProxy?: boolean;
  /** Extra CA certificates trusted for HTTPS webhooks (besides the system's and NODE_EXTRA_CA_CERTS). */
  ca?: string | Buffer | Array<string | Buffer>;
  /**
   * How often a shared store's sources and destinations are read again, so admin edits made on
   * another node take effect here. Default 5000 ms on PostgreSQL; SQLite has one process.
   */
  catalogRefreshMs?: number;
  /** Limits against slow, idle and greedy clients, over the defaults of `config/defaults.ts` (`ferry serve` passes the environment's). */
  http?: Partial<HttpServerSettings>;
  /**
   * When a bulk replay runs at once and when as a job, and a job's batch size, over
   * `defaultReplaySettings` (5,000 and 1,000; on a shared store, running jobs swept up every 30 s). Tests set small ones.
   */
  replay?: Partial<ReplaySettings>;
  /** Start the delivery loop with `start()`. Tests that drive the worker by hand turn it off. Default true. */
  deliver?: boolean;
  /**
   * Count what happens for `GET /metrics` and the recent attempts of the per-destination stats.
   * Off, neither is kept and `/metrics` does not exist. Default true.
   */
  metrics?: boolean;
  /** `GET /metrics` without the admin token (`ferry serve`: `FERRY_METRICS_PUBLIC`). Default false. */
  metricsPublic?: boolean;
  /**
   * A listener of its own for the admin API (and `/metrics`), e.g. on a loopback or internal
   * address (`ferry serve`: `--admin-port`, `--admin-host`): those paths then answer only
   * there, and 404 on the public listener, as unknown paths do; `/health` answers on both.
   * `host` defaults to `127.0.0.1`. Default none: one listener serves everything.
   */
  admin?: AdminListenerOptions;
  /**
   * How long a token made through the admin API is trusted without asking the store again:
   * the bound within which a token revoked on another node is refused here (the node that
   * revokes refuses it at once). Default {@link defaultTokenCacheMs} (2000 ms).
   */
  tokenCacheMs?: number;
  /** Time between two runs of the retention's pruner (`retention/pruner.ts`). Default one minute. */
  pruneIntervalMs?: number;
  /**
   * Where the built dashboard is read from, served at `/dashboard/` on the admin listener.
   * Default the server package's `dashboard-assets/`, written by `npm run build`.
   */
  dashboardAssets?: string;
}

/** Where the admin listener listens; see {@link FerryOptions.admin}. */
export interface AdminListenerOptions {
  /** 0: any free port. */
  port: number;
  /** Default `127.0.0.1`. */
  host?: string;
}

/** Where the public listener listens; see {@link Ferry.start}. */
export interface ListenOptions {
  /** 0: any free port. */
  port: number;
  /** Default `127.0.0.1`. */
  host?: string;
}

/** The base URLs of a started server. */
export interface FerryUrls {
  /** The public listener: ingestion and `/health` (and everything else without an admin listener). */
  url: string;
  /** Where `/admin` answers: the admin listener's URL, or `url` when there is none. */
  adminUrl: string;
}

/** A running (or ready to run) Ferry server. */
export interface Ferry {
  /** The HTTP server: ingestion, health, and the admin API unless it has a listener of its own. */
  readonly app: FastifyInstance;
  /** The HTTP server of the admin API (and `/metrics`): `app` itself, unless `admin` gave it a listener of its own. */
  readonly adminApp: FastifyInstance;
  readonly store: Store;
  /** Sources and destinations in force, kept in step with the store. */
  readonly catalog: Catalog;
  readonly worker: DeliveryWorker;
  /** The destinations' rate limits, the first send guard of the worker. */
  readonly rateLimits: RateLimitGuard;
  /** Disables destinations that fail too long (`autoDisableAfterMs`). */
  readonly autoDisable: AutoDisable;
  /** Carries out deletion requests. */
  readonly regulations: RegulationRunner;
  /** Carries out bulk replays too large for one transaction, in batches. */
  readonly replayJobs: ReplayJobRunner;
  /** Audience and computed-trait sync. */
  readonly audiences: AudienceSync;
  /** Deletes what is past its retention, every `pruneIntervalMs`. */
  readonly pruner: RetentionPruner;
  /** Per-minute counts of what this node did, written to the store once a minute (`GET /admin/v1/series`). */
  readonly activity: ActivitySeries;
  readonly logger: Logger;
  /**
   * What happens in this server, as it happens: every event of the catalogue
   * (`events/catalogue.ts`: `ingest:accepted`, `delivery:succeeded`, `regulation:done`...),
   * for metrics, dashboards and tests to subscribe to. Listeners run synchronously in the
   * stage that emits, so they must be quick.
   */
  readonly events: EventBus;
  /** The Prometheus series and recent attempts (`GET /metrics`); undefined when `metrics` is false. */
  readonly metrics: FerryMetrics | undefined;
  /** The request-body bytes ingestion holds now, overall and without a header key, out of `limitBytes` (for metrics and tests). */
  readonly ingestBodyBudget: Pick<BodyBudget, 'heldBytes' | 'keylessHeldBytes' | 'limitBytes'>;
  /**
   * Set when no token was given and a new one was made; shown once to the operator. Its hash
   * is stored once `start()` listens: a server that never listened leaves none behind.
   */
  readonly generatedAdminToken: string | undefined;
  /**
   * Listens on the port (0: any free one), and on the admin listener's when there is one, and
   * starts delivering; resolves with the public base URL.
   */
  start(port: number, host?: string): Promise<string>;
  /** As {@link start} with a port, resolving with both base URLs. */
  start(listen: ListenOptions): Promise<FerryUrls>;
  /**
   * Drains and stops: readiness fails and new requests get 503 at once, attempts and requests
   * in flight finish, held jobs go back to the queue, then the listener and the store close.
   * See {@link StopOptions} for the drain's length.
   */
  stop(options?: StopOptions): Promise<void>;
}

/**
 * Builds a Ferry server: store, catalog, ingestion and admin HTTP API, delivery worker,
 * deletion requests and audiences, all reporting to one event bus. It reads no environment:
 * `ferry serve` reads it (`cli/settings.ts`) and passes what it found.
 */
export async function createFerry(options: FerryOptions): Promise<Ferry> {
  const clock = options.clock ?? systemClock;
  const limits: HttpServerSettings = { ...defaultHttpServerSettings, ...options.http };
  const logger =
    options.logger ??
    pino({
      level: options.logLevel ?? defaultProcessSettings.logLevel,
      redact: { paths: ['req.headers.authorization', '*.writeKey', '*.sharedSecret', 'headers.authorization'], censor: '[redacted]' },
    });
  const events = new EventBus((err, name) => logger.error({ err, event: name }, 'an event listener failed'));
  logEvents(events, logger, clock);
  const { config } = options;
  const givenToken = options.adminToken?.trim();
  // Before the store is opened: a weak token stops the start with nothing created.
  if (givenToken !== undefined) assertStrongAdminToken(givenToken);
  const store = options.store ?? new SqliteStore({ path: join(options.dataDir ?? defaultProcessSettings.dataDir, 'ferry.db'), clock });
  const catalog = new Catalog(store, clock, createDestinationRegistry(options.destinationTypes));
  await applyIfChanged(store, config, { types: catalog.types, logger, clock, origin: 'the configuration file' });
  await applyRetentionIfChanged(store, config.retention, logger);
  await catalog.reload();
  const adminToken = await adminTokenInForce(store, givenToken);

  const sender =
    options.sender ??
    createHttpSender({
      allowPrivateNetworks: config.network.allowPrivateNetworks,
      allowedNetworks: config.network.allowedNetworks,
      ca: options.ca,
      connectionsPerOrigin: config.delivery.perDestinationConcurrency,
      clock,
      timers: timersOf(clock),
    });
  const rateLimits = new RateLimitGuard({
    buckets: store.rateLimitBuckets,
    clock,
    logger,
    onHeld: (destinationId, untilMs) => events.emit('delivery:rate-limited', { destinationId, untilMs }),
  });
  const guards = [rateLimits, ...(options.sendGuards ?? [])];
  const pruner = new RetentionPruner({ store, clock, logger, intervalMs: options.pruneIntervalMs });
  const metrics =
    options.metrics === false
      ? undefined
      : new FerryMetrics({
          events,
          backlog: store,
          destinationIds: () => catalog.destinations().map((d) => d.id),
          clock,
          storeSize: { retention: store.retention, pruner },
        });
  const activity = new ActivitySeries({ events, counts: store.activity, clock, node: options.nodeId ?? `process-${randomUUID()}`, logger });
  const worker = new DeliveryWorker({
    store,
    catalog,
    sender,
    settings: config.delivery,
    clock,
    logger,
    random: options.random,
    guards,
    tally: allTallies(metrics?.deliveries, activity),
    owner: options.nodeId,
  });
  forwardWorkerEvents(worker, events);
  const autoDisable = new AutoDisable({ worker, store, catalog, clock, logger, onDisabled: (notice) => events.emit('destination:auto-disabled', notice) });
  autoDisable.start();
  const wake = () => worker.wake();
  const regulations = new RegulationRunner({ store, catalog, clock, logger, onQueued: wake, events });
  const replaySettings: ReplaySettings = { ...defaultReplaySettings, ...options.replay };
  const replayJobs = new ReplayJobRunner({ store, catalog, clock, logger, settings: replaySettings, onQueued: wake });
  const audiences = new AudienceSync({ audiences: store.audiences, catalog, clock, logger, settings: config.audiences, onQueued: wake, events });

  const app = createHttpServer({ limits, trustProxy: options.trustProxy ?? false, logger });
  // The admin listener is a server of its own, with the same limits: nothing of /admin is reachable on the public one.
  const adminApp = options.admin ? createHttpServer({ limits, trustProxy: options.trustProxy ?? false, logger }) : app;
  const servers = adminApp === app ? [app] : [app, adminApp];
  const lifecycle = new Lifecycle({
    app,
    adminApp: adminApp === app ? undefined : adminApp,
    worker,
    audiences,
    regulations,
    replayJobs,
    pruner,
    activity,
    sender,
    store,
    events,
    onStopping: () => {
      catalog.stopRefreshing();
      autoDisable.stop();
      metrics?.close();
    },
  });
  for (const server of servers) {
    server.addHook('onRequest', lifecycle.refuseWhileDraining);
    guardBodyDeadlines(server, limits.bodyTimeoutMs);
    answerErrors(server, { logger, isStoreUnavailable: (error) => store.isUnavailable(error), adminElsewhere: server !== adminApp });
  }
  await healthRoutes(servers, { store, events, draining: () => lifecycle.draining });
  const ingestBodyBudget = new BodyBudget(limits.ingestBodyBudgetBytes);
  const watchedSources = new WatchedSources();
  await app.register(async (scope) => ingestRoutes(scope, { store, catalog, clock, events, watched: watchedSources, onCommitted: wake }, ingestBodyBudget));
  // What answers on the admin listener only (when there is one): the admin API, and beside it GET /metrics.
  const tokens = new AdminTokens({ store: store.tokens, bootstrapHash: adminToken.hash, clock, cacheMs: options.tokenCacheMs ?? defaultTokenCacheMs, logger });
  await registerAdminApi(adminApp, {
    store,
    catalog,
    clock,
    regulations,
    replay: { jobs: replayJobs, settings: replaySettings },
    events,
    onQueued: wake,
    audiences: { store: store.audiences, sync: audiences },
    tokens,
    logger,
    attemptWindows: metrics?.windows,
    circuits: worker.circuits,
    testCalls: { sender, timeoutMs: config.delivery.timeoutMs },
    activity,
    watchedSources,
  });
  if (metrics) await metricsRoutes(adminApp, { metrics, tokens, public: options.metricsPublic });
  // The dashboard calls the admin API from the page's own origin, so it lives on the same listener.
  await dashboardRoutes(adminApp, { assetsDir: options.dashboardAssets });

  const listen = async (port: number, host: string): Promise<FerryUrls> => {
    const url = (await app.listen({ port, host })).replace('[::1]', 'localhost');
    if (adminApp === app) return { url, adminUrl: url };
    try {
      const adminUrl = await adminApp.listen({ port: options.admin!.port, host: options.admin!.host ?? '127.0.0.1' });
      return { url, adminUrl: adminUrl.replace('[::1]', 'localhost') };
    } catch (error) {
      // Not half started: the public listener goes too (a port in use is the usual reason).
      await app.close();
      throw error;
    }
  };

  async function start(port: number, host?: string): Promise<string>;
  async function start(listenOn: ListenOptions): Promise<FerryUrls>;
  async function start(portOrListen: number | ListenOptions, host?: string): Promise<string | FerryUrls> {
    const where = typeof portOrListen === 'number' ? { port: portOrListen, host } : portOrListen;
    const urls = await listen(where.port, where.host ?? '127.0.0.1');
    await adminToken.store();
    await regulations.resumePending();
    await replayJobs.resumeRunning();
    const refreshMs = options.catalogRefreshMs ?? (store.kind === 'postgres' ? 5000 : 0);
    if (refreshMs > 0) catalog.refreshEvery(refreshMs, logger);
    // Another node's job, left running when that node died, is carried on here.
    if (store.kind === 'postgres') replayJobs.sweepEvery(replaySettings.sweepMs);
    if (options.deliver !== false) {
      // What this node held when it last stopped without handing it back (a crash) is due again at once.
      if (options.nodeId !== undefined) {
        const released = await store.releaseLeases(worker.owner, clock.now());
        if (released > 0) logger.info({ nodeId: options.nodeId, jobs: released }, 'delivery jobs this node held before a restart were handed back');
      }
      worker.start();
      audiences.start();
    }
    pruner.start();
    activity.start();
    return typeof portOrListen === 'number' ? urls.url : urls;
  }

  return {
    app,
    adminApp,
    store,
    catalog,
    worker,
    rateLimits,
    autoDisable,
    regulations,
    replayJobs,
    audiences,
    pruner,
    activity,
    logger,
    events,
    metrics,
    ingestBodyBudget,
    generatedAdminToken: adminToken.generated,
    start,
    stop: (stopOptions) => lifecycle.stop(stopOptions),
  };
}
