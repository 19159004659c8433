import { EventEmitter } from 'node:events';
import type { FerryEventName, FerryEvents } from './catalogue.js';

type Listener<K extends FerryEventName> = (payload: FerryEvents[K]) => void;

/**
 * Where every stage reports what happened, typed by the catalogue ({@link FerryEvents}).
 * Listeners run synchronously, in the emitter's turn, so they must be quick. A listener that
 * throws is reported to `onListenerError` and the others still run: a subscriber's bug must
 * never fail the ingestion or delivery that emitted.
 */
export class EventBus {
  private readonly emitter = new EventEmitter();

  /** @param onListenerError Told of each error a listener throws (Ferry logs it). */
  constructor(private readonly onListenerError: (error: unknown, name: FerryEventName) => void = () => {}) {
    // Logs, metrics and each open dashboard view may all listen to one event.
    this.emitter.setMaxListeners(0);
  }

  /** Calls `listener` with the payload of every `name` event from now on. */
  on<K extends FerryEventName>(name: K, listener: Listener<K>): this {
    this.emitter.on(name, listener);
    return this;
  }

  /** Stops calling a listener given to {@link on}. */
  off<K extends FerryEventName>(name: K, listener: Listener<K>): this {
    this.emitter.off(name, listener);
    return this;
  }

  /** How many listeners `name` has now (for tests and metrics: a subscriber that went away must have left). */
  listenerCount(name: FerryEventName): number {
    return this.emitter.listenerCount(name);
  }

  /** Hands `payload` to every listener of `name`, in the order they subscribed. */
  emit<K extends FerryEventName>(name: K, payload: FerryEvents[K]): void {
    for (const listener of this.emitter.listeners(name) as Listener<K>[]) {
      try {
        listener(payload);
      } catch (error) {
        this.onListenerError(error, name);
      }
    }
  }

  /**
   * Runs `attach` when `name` gets its first listener, and the function it returns when the
   * last one leaves: forwards from a source that builds a payload only while someone listens
   * (the worker's `delivery:succeeded`) keep it so.
   */
  whileListened(name: FerryEventName, attach: () => () => void): void {
    // A listener that came first (the log's, subscribed before the worker existed) counts too.
    let detach: (() => void) | undefined = this.emitter.listenerCount(name) > 0 ? attach() : undefined;
    this.emitter.on('newListener', (event: string) => {
      if (event === name && detach === undefined) detach = attach();
    });
    this.emitter.on('removeListener', (event: string) => {
      if (event === name && detach !== undefined && this.emitter.listenerCount(name) === 0) {
        detach();
        detach = undefined;
      }
    });
  }
}
