import type { FastifyInstance, FastifyReply } from 'fastify';
import { validateDestination, validateSource } from '../config/schema.js';
import { destinationRedactor, redactSource } from '../config/redact.js';
import { FerryError } from '../errors/error-codes.js';
import { parseIsoTimestamp } from '../ingest/timestamps.js';
import type { RegulationRunner } from '../regulations/regulation-runner.js';
import type { Catalog } from '../routing/catalog.js';
import type { EventBus } from '../events/event-bus.js';
import type { DeliveryStatus, Store } from '../store/store.js';
import type { Clock } from '../util/clock.js';
import { mergePatch } from './merge-patch.js';
import { refuseUnknownKeys } from './unknown-keys.js';

/** What the admin API needs. */
export interface AdminDeps {
  store: Store;
  catalog: Catalog;
  clock: Clock;
  regulations: RegulationRunner;
  /** What happens in the server, streamed by `GET /tail`. */
  events: EventBus;
  /** SHA-256 of the admin token; the token itself is never kept. */
  adminTokenHash: Buffer;
  /** Called when jobs became due (a replay), so the worker looks at once. */
  onQueued?: () => void;
}

const statuses: DeliveryStatus[] = ['pending', 'succeeded', 'dead'];

function pageLimit(raw: unknown): number {
  const n = raw === undefined ? 100 : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new FerryError('bad_request', 'limit must be an integer from 1 to 1000', 'limit');
  return n;
}

function optionalInt(raw: unknown, name: string): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new FerryError('bad_request', `${name} must be a non-negative integer`, name);
  return n;
}

function optionalString(raw: unknown, name: string): string | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || raw.length === 0) throw new FerryError('bad_request', `${name} must be a non-empty string`, name);
  return raw;
}

function stringList(raw: unknown, name: string, required: boolean): string[] | undefined {
  if (raw === undefined && !required) return undefined;
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > 1000 || !raw.every((v) => typeof v === 'string' && v.length > 0))
    throw new FerryError('bad_request', `${name} must be a list of 1 to 1000 non-empty strings`, name);
  return raw as string[];
}

function deliveryId(raw: string): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new FerryError('not_found', `no delivery ${raw}`);
  return n;
}

/**
 * The admin API under `/admin/v1`: sources, destinations, deliveries with their attempts,
 * dead letters and replay, deletion requests, rejected messages. Register it through
 * `registerAdminApi`, which checks the Bearer token and refuses query parameters a route
 * does not list in its `config.query`. Secrets are never returned.
 */
export async function adminRoutes(app: FastifyInstance, deps: AdminDeps): Promise<void> {
  const { store, catalog, clock } = deps;

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
  app.get('/destinations', async () => ({ destinations: catalog.destinations().map(redactDestination) }));
  app.get<{ Params: { id: string } }>('/destinations/:id', async (request) => {
    const destination = catalog.destination(request.params.id);
    if (!destination) throw new FerryError('not_found', `no destination ${request.params.id}`);
    return redactDestination(destination);
  });
  app.post('/destinations', async (request, reply) => {
    const destination = validateDestination(request.body, sourceIds(), otherDestinations(), catalog.types);
    await catalog.putDestination(destination);
    return reply.code(201).send(redactDestination(destination));
  });
  app.put<{ Params: { id: string } }>('/destinations/:id', async (request) => {
    const body = { ...(request.body as object), id: request.params.id };
    const destination = validateDestination(body, sourceIds(), otherDestinations(request.params.id), catalog.types);
    await catalog.putDestination(destination);
    return redactDestination(destination);
  });
  // A JSON merge patch (RFC 7396), e.g. {"enabled": false}: see docs/admin-api.md for why.
  app.patch<{ Params: { id: string } }>('/destinations/:id', async (request) => {
    const current = catalog.destination(request.params.id);
    if (!current) throw new FerryError('not_found', `no destination ${request.params.id}`);
    const patch = request.body;
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) throw new FerryError('bad_request', 'the body must be a JSON object');
    const destination = validateDestination(
      { ...(mergePatch(current, patch) as object), id: current.id },
      sourceIds(),
      otherDestinations(current.id),
      catalog.types,
    );
    await catalog.putDestination(destination);
    return redactDestination(destination);
  });
  app.delete<{ Params: { id: string } }>('/destinations/:id', async (request, reply) => {
    if (!(await catalog.removeDestination(request.params.id))) throw new FerryError('not_found', `no destination ${request.params.id}`);
    return reply.code(204).send();
  });

  // Deliveries and dead letters
  const existingDestinations = () => catalog.destinations().map((d) => d.id);
  // A filter naming nothing that exists is a mistake to report, not a question whose answer is "none".
  const knownDestination = (raw: unknown): string | undefined => {
    const id = optionalString(raw, 'destinationId');
    if (id !== undefined && !catalog.destination(id)) throw new FerryError('not_found', `no destination ${id}`, 'destinationId');
    return id;
  };
  const knownSource = (raw: unknown): string | undefined => {
    const id = optionalString(raw, 'sourceId');
    if (id !== undefined && !catalog.source(id)) throw new FerryError('not_found', `no source ${id}`, 'sourceId');
    return id;
  };
  const listParameters = ['status', 'destinationId', 'sourceId', 'messageId', 'after', 'limit'];
  type ListQuery = { status?: string; destinationId?: string; sourceId?: string; messageId?: string; after?: string; limit?: string };
  const list = async (query: ListQuery, status?: DeliveryStatus) => {
    const wanted = status ?? (query.status as DeliveryStatus | undefined);
    if (wanted !== undefined && !statuses.includes(wanted)) throw new FerryError('bad_request', `status must be one of ${statuses.join(', ')}`, 'status');
    const limit = pageLimit(query.limit);
    const deliveries = await store.listDeliveries({
      status: wanted,
      destinationId: knownDestination(query.destinationId),
      sourceId: knownSource(query.sourceId),
      messageId: optionalString(query.messageId, 'messageId'),
      afterId: optionalInt(query.after, 'after'),
      limit,
    });
    const last = deliveries.at(-1);
    return { deliveries, next: deliveries.length === limit && last ? String(last.id) : null };
  };
  app.get<{ Querystring: ListQuery }>('/deliveries', { config: { query: listParameters } }, async (request) => list(request.query));
  app.get<{ Params: { id: string } }>('/deliveries/:id', async (request) => {
    const found = await store.getDelivery(deliveryId(request.params.id));
    if (!found) throw new FerryError('not_found', `no delivery ${request.params.id}`);
    return { ...found.delivery, body: found.body, attempts: found.attempts };
  });
  app.get<{ Querystring: ListQuery }>('/dead-letters', { config: { query: listParameters.filter((p) => p !== 'status') } }, async (request) =>
    list(request.query, 'dead'),
  );
  app.post<{ Params: { id: string } }>('/dead-letters/:id/replay', async (request) => {
    const id = deliveryId(request.params.id);
    const replayed = await store.replay({ ids: [id], destinationIdsIn: existingDestinations() }, clock.now());
    if (replayed === 0) throw new FerryError('not_found', `no dead letter ${request.params.id} of an existing destination`);
    deps.onQueued?.();
    return { replayed };
  });
  app.post('/dead-letters/replay', async (request) => {
    const body = (request.body ?? {}) as { ids?: unknown; destinationId?: unknown; since?: unknown };
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new FerryError('bad_request', 'the body must be a JSON object');
    refuseUnknownKeys(body, ['ids', 'destinationId', 'since'], 'key');
    let ids: number[] | undefined;
    if (body.ids !== undefined) {
      if (!Array.isArray(body.ids) || body.ids.length > 1000 || !body.ids.every((v) => Number.isSafeInteger(v)))
        throw new FerryError('bad_request', 'ids must be a list of at most 1000 delivery ids', 'ids');
      ids = body.ids as number[];
    }
    let sinceMs: number | undefined;
    if (body.since !== undefined) {
      sinceMs = typeof body.since === 'string' ? parseIsoTimestamp(body.since) : undefined;
      if (sinceMs === undefined) throw new FerryError('bad_request', 'since must be an ISO 8601 date-time', 'since');
    }
    const replayed = await store.replay(
      { ids, destinationId: knownDestination(body.destinationId), sinceMs, destinationIdsIn: existingDestinations() },
      clock.now(),
    );
    if (replayed > 0) deps.onQueued?.();
    return { replayed };
  });

  // Deletion requests
  app.post('/regulations', async (request, reply) => {
    const body = request.body as { userIds?: unknown; sourceIds?: unknown } | null;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new FerryError('bad_request', 'the body must be a JSON object');
    refuseUnknownKeys(body, ['userIds', 'sourceIds'], 'key');
    const userIds = stringList(body.userIds, 'userIds', true)!;
    const scope = stringList(body.sourceIds, 'sourceIds', false) ?? null;
    for (const id of scope ?? []) if (!catalog.source(id)) throw new FerryError('invalid_settings', `unknown source ${id}`, 'sourceIds');
    const regulation = await deps.regulations.submit(userIds, scope);
    return reply.code(202).send({ id: regulation.id, status: regulation.status });
  });
  app.get<{ Params: { id: string } }>('/regulations/:id', async (request) => {
    const regulation = await store.getRegulation(request.params.id);
    if (!regulation) throw new FerryError('not_found', `no regulation ${request.params.id}`);
    return regulation;
  });

  // Rejected messages and counts
  app.get<{ Querystring: { sourceId?: string; limit?: string } }>('/rejections', { config: { query: ['sourceId', 'limit'] } }, async (request) => ({
    counts: await store.rejectionCounts(),
    recent: await store.listRejections({ sourceId: knownSource(request.query.sourceId), limit: pageLimit(request.query.limit) }),
  }));
  app.get('/stats', async () => store.stats());
}
