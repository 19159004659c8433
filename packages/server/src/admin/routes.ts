import type { FastifyInstance, FastifyReply } from 'fastify';
import { validateDestination, validateSource } from '../config/schema.js';
import { destinationRedactor, redactSource } from '../config/redact.js';
import { FerryError } from '../errors/error-codes.js';
import type { RegulationRunner } from '../regulations/regulation-runner.js';
import type { ReplayJobRunner, ReplaySettings } from '../replay/replay-job-runner.js';
import type { Catalog } from '../routing/catalog.js';
import type { EventBus } from '../events/event-bus.js';
import type { Store } from '../store/store.js';
import type { Clock } from '../util/clock.js';
import { knownIds } from './delivery-routes.js';
import { mergePatch } from './merge-patch.js';
import { optionalChoice, pageLimit } from './query-params.js';
import type { DestinationStatsReader } from './stats-routes.js';
import { backfillDays, backfillFilter, refuseDisabled, startArchiveReplay } from './archive-replay-routes.js';
import { toReplayJobView } from './replay-routes.js';

/** What the admin API needs. */
export interface AdminDeps {
  store: Store;
  catalog: Catalog;
  clock: Clock;
  regulations: RegulationRunner;
  /** What happens in the server, streamed by `GET /tail`. */
  events: EventBus;
  /** Bulk replays run as jobs, and when a replay becomes one. */
  replay: { jobs: ReplayJobRunner; settings: ReplaySettings };
  /** Called when jobs became due (a replay), so the worker looks at once. */
  onQueued?: () => void;
  /** Every destination's stats for `GET /destinations?include=stats` (stats-routes.ts). */
  destinationStats: Pick<DestinationStatsReader, 'summaries'>;
}

/**
 * The admin API under `/admin/v1`: sources, destinations, rejected messages and counts.
 * Deliveries, replays and deletion requests have modules of their own
 * (delivery-routes.ts, replay-routes.ts, regulation-routes.ts). Register it through
 * `registerAdminApi`, which checks the Bearer token and refuses query parameters a route
 * does not list in its `config.query`. Secrets are never returned.
 */
export async function adminRoutes(app: FastifyInstance, deps: AdminDeps): Promise<void> {
  const { store, catalog } = deps;

  // Sources
  app.get('/sources', async () => ({ sources: catalog.sources().map(redactSource) }));
  app.get<{ Params: { id: string } }>('/sources/:id', async (request) => {
    const source = catalog.source(request.params.id);
    if (!source) throw new FerryError('not_found', `no source ${request.params.id}`);
    return redactSource(source);
  });
  app.post('/sources', async (request, reply: FastifyReply) => {
    const source = validateSource(request.body, catalog.sources());
    await catalog.putSource(source);
    return reply.code(201).send(redactSource(source));
  });
  app.put<{ Params: { id: string } }>('/sources/:id', async (request) => {
    const body = { ...(request.body as object), id: request.params.id };
    const source = validateSource(
      body,
      catalog.sources().filter((s) => s.id !== request.params.id),
    );
    await catalog.putSource(source);
    return redactSource(source);
  });
  app.delete<{ Params: { id: string } }>('/sources/:id', async (request, reply) => {
    if (!(await catalog.removeSource(request.params.id))) throw new FerryError('not_found', `no source ${request.params.id}`);
    return reply.code(204).send();
  });

  // Destinations, of the types this server knows
  const redactDestination = destinationRedactor(catalog.types);
  const sourceIds = () => catalog.sources().map((s) => s.id);
  const otherDestinations = (id?: string) =>
    catalog
      .destinations()
      .map((d) => d.id)
      .filter((d) => d !== id);
  // `include=stats` adds each one's stats: a dashboard's overview in one call, the backlog read once.
  app.get<{ Querystring: { include?: string } }>('/destinations', { config: { query: ['include'] } }, async (request) => {
    const destinations = catalog.destinations();
    if (optionalChoice(request.query.include, 'include', ['stats'] as const) === undefined) return { destinations: destinations.map(redactDestination) };
    const stats = await deps.destinationStats.summaries(destinations);
    return { destinations: destinations.map((d, i) => ({ ...redactDestination(d), stats: stats[i]! })) };
  });
  app.get<{ Params: { id: string } }>('/destinations/:id', async (request) => {
    const destination = catalog.destination(request.params.id);
    if (!destination) throw new FerryError('not_found', `no destination ${request.params.id}`);
    return redactDestination(destination);
  });
  // `backfill` is a request, not part of the destination: it starts an archive replay of the
  // last N days once the destination exists, and is not stored with it.
  app.post('/destinations', async (request, reply) => {
    let config = request.body;
    let days: number | undefined;
    if (isObject(config) && 'backfill' in config) {
      const { backfill, ...rest } = config;
      days = backfillDays(backfill);
      config = rest;
    }
    const destination = validateDestination(config, sourceIds(), otherDestinations(), catalog.types);
    if (days !== undefined) refuseDisabled(catalog, destination);
    await catalog.putDestination(destination);
    if (days === undefined) return reply.code(201).send(redactDestination(destination));
    // The destination exists now: a backfill that could not start is told with it, not as an
    // error that would hide it, and the caller can start the replay with `POST /replays`.
    try {
      const job = await startArchiveReplay({ store, jobs: deps.replay.jobs }, backfillFilter(destination, days, deps.clock.now()));
      return reply.code(201).send({ ...redactDestination(destination), backfillJob: toReplayJobView(job) });
    } catch (err) {
      request.log.error({ err, destinationId: destination.id }, 'destination created, but its backfill could not start');
      return reply.code(201).send({ ...redactDestination(destination), backfillError: backfillErrorOf(err, store) });
    }
  });
  app.put<{ Params: { id: string } }>('/destinations/:id', async (request) => {
    const body = { ...(request.body as object), id: request.params.id };
    const destination = validateDestination(body, sourceIds(), otherDestinations(request.params.id), catalog.types);
    await catalog.putDestination(destination);
    return redactDestination(destination);
  });
  // A JSON merge patch (RFC 7396), e.g. {"enabled": false}: see docs/admin-api.md for why.
  app.patch<{ Params: { id: string } }>('/destinations/:id', async (request) => {
    // A patch merges into what is stored, not this node's copy: another node may have changed
    // it since (an auto-disable, another patch), and the write is a compare-and-set on it.
    await catalog.reload();
    const current = catalog.destination(request.params.id);
    if (!current) throw new FerryError('not_found', `no destination ${request.params.id}`);
    const patch = request.body;
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) throw new FerryError('bad_request', 'the body must be a JSON object');
    // A filter is a tree of conditions: merged key by key, two conditions would become one
    // mapping that says neither, so a patch's filter replaces the stored one whole.
    const base = (patch as { filter?: unknown }).filter === undefined ? current : { ...current, filter: undefined };
    const destination = validateDestination(
      { ...(mergePatch(base, patch) as object), id: current.id },
      sourceIds(),
      otherDestinations(current.id),
      catalog.types,
    );
    if (!(await catalog.replaceDestination(destination, current)))
      throw new FerryError('conflict', `destination ${current.id} changed while this patch was applied; nothing was changed, read it again and patch again`);
    return redactDestination(destination);
  });
  app.delete<{ Params: { id: string } }>('/destinations/:id', async (request, reply) => {
    if (!(await catalog.removeDestination(request.params.id))) throw new FerryError('not_found', `no destination ${request.params.id}`);
    return reply.code(204).send();
  });

  // Rejected messages and counts
  const known = knownIds(catalog);
  app.get<{ Querystring: { sourceId?: string; limit?: string } }>('/rejections', { config: { query: ['sourceId', 'limit'] } }, async (request) => ({
    counts: await store.rejectionCounts(),
    recent: await store.listRejections({ sourceId: known.source(request.query.sourceId), limit: pageLimit(request.query.limit) }),
  }));
  // What is live is read from the store, the one source of truth, not from this node's copy.
  app.get('/stats', async () => {
    const [stats, live] = await Promise.all([store.stats(), store.loadCatalog()]);
    return {
      ...stats,
      sources: live.sources.map((s) => ({ id: s.id, name: s.name })),
      destinations: live.destinations.map((d) => ({ id: d.id, name: d.name, type: d.type, enabled: d.enabled })),
    };
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Why a backfill did not start, as an error body's code and message (an unexpected fault's own message is not shown). */
function backfillErrorOf(err: unknown, store: Store): { code: string; message: string } {
  const error = err instanceof FerryError ? err : store.isUnavailable(err) ? new FerryError('store_unavailable') : new FerryError('internal_error');
  return { code: error.code, message: error.message };
}
