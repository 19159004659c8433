import type { DeliveryWorker } from '../delivery/worker.js';
import type { FerryEvents } from './catalogue.js';
import type { EventBus } from './event-bus.js';

/**
 * Forwards the delivery worker's events into the bus as they are. `delivery:succeeded` and
 * `delivery:attempted` are heard from the worker only while the bus has a listener for them:
 * the worker builds those payloads, many thousand times a second, only for a listener.
 */
export function forwardWorkerEvents(worker: DeliveryWorker, bus: EventBus): void {
  worker.on('delivery:retrying', (e) => bus.emit('delivery:retrying', e));
  worker.on('delivery:dead', (e) => bus.emit('delivery:dead', e));
  worker.on('delivery:lease-lost', (e) => bus.emit('delivery:lease-lost', e));
  worker.on('worker:error', (e) => bus.emit('worker:error', e));
  worker.on('breaker:opened', (e) => bus.emit('breaker:opened', e));
  worker.on('breaker:half-open', (e) => bus.emit('breaker:half-open', e));
  worker.on('breaker:closed', (e) => bus.emit('breaker:closed', e));
  for (const name of ['delivery:succeeded', 'delivery:attempted'] as const)
    bus.whileListened(name, () => {
      const forward = (e: FerryEvents[typeof name]) => bus.emit(name, e);
      worker.on(name, forward);
      return () => worker.off(name, forward);
    });
}
