/**
 * A one-way abort flag with plain callbacks, for the per-request path. Node's AbortSignal is
 * an EventTarget: creating one and listening on it cost more than the rest of a small
 * request's bookkeeping together, so a signal is made only for a transport that reads one.
 */
export class AbortSwitch {
  #aborted = false;
  #callbacks: Set<() => void> | undefined;
  #controller: AbortController | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  /**
   * Runs `fn` once the switch is thrown, at once if it already is. Returns a function that
   * removes it.
   */
  onAbort(fn: () => void): () => void {
    if (this.#aborted) {
      fn();
      return () => {};
    }
    (this.#callbacks ??= new Set()).add(fn);
    return () => this.#callbacks?.delete(fn);
  }

  /** Throws the switch: runs every callback once, and aborts the signal if one was made. */
  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    const callbacks = this.#callbacks;
    this.#callbacks = undefined;
    this.#controller?.abort();
    if (callbacks) for (const fn of callbacks) fn();
  }

  /** An AbortSignal that follows this switch, made on first use. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort();
    }
    return this.#controller.signal;
  }
}
