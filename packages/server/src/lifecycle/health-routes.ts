import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import type { EventBus } from '../events/event-bus.js';
import type { Store } from '../store/store.js';
import { ferryVersion } from '../util/version.js';

/** What the health checks look at. */
export interface HealthDeps {
  store: Pick<Store, 'kind' | 'checkReady'>;
  /** True from the first moment of a stop. */
  draining(): boolean;
  /** Told when readiness finds the store unavailable (once per outage) and when it finds it back. */
  events: EventBus;
}

/**
 * `GET /health`, liveness: 200 while the process serves HTTP, during the drain too.
 * `GET /health/ready`, readiness: 200 only while the store answers and can write (it was
 * migrated before the server listened) and no stop has begun; otherwise 503 with
 * `shutting_down` or `store_unavailable`. Both are open: no token. Registered on every
 * listener (the public one, and the admin one when there is one).
 */
export async function healthRoutes(apps: readonly FastifyInstance[], deps: HealthDeps): Promise<void> {
  const { store, events } = deps;
  // One state for every listener (the public one and the admin one): an outage is told once.
  let storeWasReady = true;
  const live = async () => ({ status: 'ok', version: ferryVersion, store: store.kind });
  const ready = async (_request: FastifyRequest, reply: FastifyReply) => {
    if (deps.draining()) return reply.code(503).send(new FerryError('shutting_down').toBody());
    try {
      await store.checkReady();
    } catch (err) {
      // Told once per outage, not at every probe; the answer names no host or path.
      if (storeWasReady) events.emit('store:unavailable', { error: err });
      storeWasReady = false;
      return reply.code(503).send(new FerryError('store_unavailable', 'The store cannot be written or reached.').toBody());
    }
    if (!storeWasReady) events.emit('store:ready', {});
    storeWasReady = true;
    return { status: 'ready', version: ferryVersion, store: store.kind };
  };
  for (const app of apps) {
    app.get('/health', live);
    app.get('/health/ready', ready);
  }
}
