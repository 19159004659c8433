/** A listener for event `K` of the map `E`. */
export type Listener<E, K extends keyof E> = (payload: E[K]) => void;

/**
 * A minimal typed event emitter (the library has no dependencies, and Node's EventEmitter
 * throws on an unheard `error` event, which would turn a failed delivery into a crash).
 * A listener that throws is reported to `onListenerError` and does not stop the others.
 */
export class TypedEmitter<E> {
  #listeners = new Map<keyof E, Set<Listener<E, keyof E>>>();

  /** Called when a listener throws; replaced by subclasses to log it. */
  protected onListenerError(_event: keyof E, _error: unknown): void {}

  /** Adds `listener` for `event`. */
  on<K extends keyof E>(event: K, listener: Listener<E, K>): this {
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, (set = new Set()));
    set.add(listener as Listener<E, keyof E>);
    return this;
  }

  /** Removes `listener` from `event`. */
  off<K extends keyof E>(event: K, listener: Listener<E, K>): this {
    this.#listeners.get(event)?.delete(listener as Listener<E, keyof E>);
    return this;
  }

  /** Adds a listener removed after its first call. */
  once<K extends keyof E>(event: K, listener: Listener<E, K>): this {
    const wrapper: Listener<E, K> = (payload) => {
      this.off(event, wrapper);
      listener(payload);
    };
    return this.on(event, wrapper);
  }

  /** Number of listeners for `event`. */
  listenerCount(event: keyof E): number {
    return this.#listeners.get(event)?.size ?? 0;
  }

  protected emit<K extends keyof E>(event: K, payload: E[K]): void {
    const set = this.#listeners.get(event);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        listener(payload);
      } catch (error) {
        this.onListenerError(event, error);
      }
    }
  }
}
