import type { DeliveryWorker } from '../delivery/worker.js';
import type { FerryEvents } from './catalogue.js';
import type { EventBus } from './event-bus.js';

/**
 * Forwards the delivery worker's events into the bus as they are. `delivery:succeeded` is
 * heard from the worker only while the bus has a listener for it: the worker builds that
 * payload, many thousand times a second, only for a listener.
 */
export function forwardWorkerEvents(worker: DeliveryWorker, bus: EventBus): void {
  worker.on('delivery:retrying', (e) => bus.emit('delivery:retrying', e));
  worker.on('delivery:dead', (e) => bus.emit('delivery:dead', e));
  worker.on('delivery:lease-lost', (e) => bus.emit('delivery:lease-lost', e));
  worker.on('worker:error', (e) => bus.emit('worker:error', e));
  bus.whileListened('delivery:succeeded', () => {
    const forward = (e: FerryEvents['delivery:succeeded']) => bus.emit('delivery:succeeded', e);
    worker.on('delivery:succeeded', forward);
    return () => worker.off('delivery:succeeded', forward);
  });
}
