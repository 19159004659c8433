import type { FastifyInstance } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import type { RegulationRunner } from '../regulations/regulation-runner.js';
import type { Catalog } from '../routing/catalog.js';
import type { Regulation, Store } from '../store/store.js';
import { objectBody, optionalChoice, optionalTimeCursor, pageLimit, stringList, timeCursor } from './query-params.js';
import { refuseUnknownKeys } from './unknown-keys.js';

/** What the regulation routes need. */
export interface RegulationRouteDeps {
  store: Store;
  catalog: Catalog;
  regulations: RegulationRunner;
}

const statuses: readonly Regulation['status'][] = ['pending', 'done'];

/** Deletion requests: submitted (`POST /regulations`), listed newest first, and read one by one. */
export async function regulationRoutes(app: FastifyInstance, deps: RegulationRouteDeps): Promise<void> {
  const { store, catalog } = deps;

  app.post('/regulations', async (request, reply) => {
    const body = objectBody(request.body);
    refuseUnknownKeys(body, ['userIds', 'sourceIds'], 'key');
    const userIds = stringList(body.userIds, 'userIds', true)!;
    const scope = stringList(body.sourceIds, 'sourceIds', false) ?? null;
    for (const id of scope ?? []) if (!catalog.source(id)) throw new FerryError('invalid_settings', `unknown source ${id}`, 'sourceIds');
    const regulation = await deps.regulations.submit(userIds, scope);
    return reply.code(202).send({ id: regulation.id, status: regulation.status });
  });

  app.get<{ Querystring: { status?: string; after?: string; limit?: string } }>(
    '/regulations',
    { config: { query: ['status', 'after', 'limit'] } },
    async (request) => {
      const limit = pageLimit(request.query.limit);
      const regulations = await store.listRegulations({
        status: optionalChoice(request.query.status, 'status', statuses),
        after: optionalTimeCursor(request.query.after),
        limit,
      });
      const last = regulations.at(-1);
      return { regulations, next: regulations.length === limit && last ? timeCursor({ createdAtMs: Date.parse(last.createdAt), id: last.id }) : null };
    },
  );

  app.get<{ Params: { id: string } }>('/regulations/:id', async (request) => {
    const regulation = await store.getRegulation(request.params.id);
    if (!regulation) throw new FerryError('not_found', `no regulation ${request.params.id}`);
    return regulation;
  });
}
