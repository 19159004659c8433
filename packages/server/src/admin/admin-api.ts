import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { destinationRedactor, redactSource } from '../config/redact.js';
import type { AudienceStore } from '../store/audience-store.js';
import type { AudienceSync } from '../audiences/audience-sync.js';
import { notFound } from '../http/not-found.js';
import type { AudienceKind } from '../model/audience.js';
import { requireAdminToken } from './admin-auth.js';
import type { AdminTokens } from './admin-tokens.js';
import { auditChanges, type ObjectReader } from './audit.js';
import { auditRoutes } from './audit-routes.js';
import { retentionRoutes } from './retention-routes.js';
import { audienceRoutes, toView as audienceView } from './audience-routes.js';
import { deliveryRoutes } from './delivery-routes.js';
import { regulationRoutes } from './regulation-routes.js';
import { replayRoutes } from './replay-routes.js';
import { archiveReplayRoutes } from './archive-replay-routes.js';
import { configRoutes } from './config-routes.js';
import { adminRoutes, type AdminDeps } from './routes.js';
import { tokenRoutes, tokenView } from './token-routes.js';
import { tailRoutes } from './tail-routes.js';
import { EventStreams } from './event-streams.js';
import { liveRoutes } from './live-routes.js';
import { seriesRoutes } from './series-routes.js';
import { writeKeyRoutes } from './write-key-routes.js';
import type { ActivitySeries } from '../metrics/activity-series.js';
import { DestinationStatsReader, statsRoutes, type StatsRouteDeps } from './stats-routes.js';
import { secretRoutes } from './secret-routes.js';
import { sessionRoutes } from './session-routes.js';
import { destinationTestRoutes } from './destination-test-routes.js';
import type { WebhookSender } from '../destinations/http/sender.js';
import { refuseUnknownKeys } from './unknown-keys.js';
import type { AttemptWindows } from '../metrics/attempt-windows.js';
import type { WatchedSources } from '../ingest/watched-sources.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Query parameters an admin route accepts; any other is refused with `unknown_parameter`. None when absent. */
    query?: readonly string[];
  }
}

/** What the whole admin surface needs: the admin routes' dependencies, plus audiences, tokens and the log. */
export interface AdminApiDeps extends Omit<AdminDeps, 'destinationStats'> {
  audiences: { store: AudienceStore; sync: AudienceSync };
  /** The tokens in force: the bootstrap token and those made through the API. */
  tokens: AdminTokens;
  /** Where changes applied through the API are logged (`config-routes.ts`). */
  logger: Logger;
  /** Recent attempts per destination for the stats; absent when metrics are off. */
  attemptWindows?: Pick<AttemptWindows, 'stats'>;
  /** The worker's circuit breakers, for the stats. */
  circuits?: StatsRouteDeps['circuits'];
  /** The transport and time limit of delivery, for `POST /destinations/{id}/test`. */
  testCalls: { sender: WebhookSender; timeoutMs: number };
  /** The per-minute counts of `GET /series`. */
  activity: Pick<ActivitySeries, 'series'>;
  /** The sources `GET /sources/{id}/live` watches, shared with ingestion. */
  watchedSources: WatchedSources;
}

/** The path every admin route lives under. */
export const adminPrefix = '/admin';

/**
 * Everything under `/admin`: the token is checked before anything else, unknown paths
 * included, so that the admin surface cannot be mapped without it (an unknown path answers
 * 404 only to a caller holding the token); then its scope (a `read` token only reads). A
 * query parameter a route does not list in its `config.query` is refused, on every route.
 * Every change is written to the audit log (`audit.ts`), on every route.
 */
export async function registerAdminApi(app: FastifyInstance, deps: AdminApiDeps): Promise<void> {
  await app.register(
    async (admin) => {
      admin.addHook('onRequest', requireAdminToken(deps.tokens));
      admin.addHook('preValidation', async (request) => {
        if (!request.is404) refuseUnknownKeys(request.query as object, request.routeOptions.config.query ?? [], 'query parameter');
      });
      auditChanges(admin, { log: deps.store.audit, clock: deps.clock, logger: deps.logger, readers: auditReaders(deps) });
      // The media type of RFC 7396, which PATCH /destinations/{id} implements; read as JSON.
      admin.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, admin.getDefaultJsonParser('error', 'error'));
      admin.setNotFoundHandler((request, reply) => reply.code(404).send(notFound(request.method, request.url).toBody()));
      await admin.register(
        async (v1) => {
          const destinationStats = new DestinationStatsReader({
            store: deps.store,
            clock: deps.clock,
            windows: deps.attemptWindows,
            circuits: deps.circuits,
          });
          await adminRoutes(v1, { ...deps, destinationStats });
          await deliveryRoutes(v1, deps);
          await replayRoutes(v1, { ...deps, jobs: deps.replay.jobs, settings: deps.replay.settings });
          await archiveReplayRoutes(v1, { store: deps.store, catalog: deps.catalog, clock: deps.clock, jobs: deps.replay.jobs });
          await regulationRoutes(v1, deps);
          await secretRoutes(v1, { catalog: deps.catalog, clock: deps.clock });
          await audienceRoutes(v1, { audiences: deps.audiences.store, sync: deps.audiences.sync, catalog: deps.catalog, clock: deps.clock });
          await tokenRoutes(v1, deps.tokens);
          await sessionRoutes(v1);
          await writeKeyRoutes(v1, deps.catalog);
          await destinationTestRoutes(v1, { catalog: deps.catalog, clock: deps.clock, logger: deps.logger, ...deps.testCalls });
          await auditRoutes(v1, deps.store.audit);
          const streams = new EventStreams(deps.clock);
          streams.endOnClose(v1);
          await tailRoutes(v1, { events: deps.events, clock: deps.clock, streams });
          await liveRoutes(v1, { events: deps.events, catalog: deps.catalog, streams, watched: deps.watchedSources });
          await configRoutes(v1, deps);
          await seriesRoutes(v1, deps.activity);
          await retentionRoutes(v1, deps.store);
          await statsRoutes(v1, { store: deps.store, catalog: deps.catalog, reader: destinationStats });
        },
        { prefix: '/v1' },
      );
    },
    { prefix: adminPrefix },
  );
}

/** How the audit log reads an object's before and after: as the admin API shows it, secrets hidden. */
function auditReaders(deps: AdminApiDeps): Record<string, ObjectReader> {
  const { catalog } = deps;
  const redactDestination = destinationRedactor(catalog.types);
  const audience = (kind: AudienceKind) => async (id: string) => {
    const found = await deps.audiences.store.get(id);
    return found?.kind === kind ? audienceView(found) : null;
  };
  return {
    source: (id) => {
      const source = catalog.source(id);
      return source && redactSource(source);
    },
    destination: (id) => {
      const destination = catalog.destination(id);
      return destination && redactDestination(destination);
    },
    token: async (id) => {
      const token = await deps.tokens.get(id);
      return token && tokenView(token);
    },
    audience: audience('audience'),
    'computed-trait': audience('computed_trait'),
  };
}
