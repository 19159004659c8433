import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { FerryError } from '../errors/error-codes.js';
import type { Store } from '../store/store.js';
import { ferryVersion } from '../util/version.js';

/** What the health checks look at. */
export interface HealthDeps {
  store: Pick<Store, 'kind' | 'checkReady'>;
  /** True from the first moment of a stop. */
  draining(): boolean;
  logger: Logger;
}

/**
 * `GET /health`, liveness: 200 while the process serves HTTP, during the drain too.
 * `GET /health/ready`, readiness: 200 only while the store answers and can write (it was
 * migrated before the server listened) and no stop has begun; otherwise 503 with
 * `shutting_down` or `store_unavailable`. Both are open: no token.
 */
export async function healthRoutes(app: FastifyInstance, deps: HealthDeps): Promise<void> {
  const { store, logger } = deps;
  let storeWasReady = true;
  app.get('/health', async () => ({ status: 'ok', version: ferryVersion, store: store.kind }));
  app.get('/health/ready', async (_request, reply) => {
    if (deps.draining()) return reply.code(503).send(new FerryError('shutting_down').toBody());
    try {
      await store.checkReady();
    } catch (err) {
      // Logged once per outage, not at every probe; the answer names no host or path.
      if (storeWasReady) logger.warn({ err }, 'store not ready; /health/ready answers 503');
      storeWasReady = false;
      return reply.code(503).send(new FerryError('store_unavailable', 'The store cannot be written or reached.').toBody());
    }
    if (!storeWasReady) logger.info('store ready again');
    storeWasReady = true;
    return { status: 'ready', version: ferryVersion, store: store.kind };
  });
}
