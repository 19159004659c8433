/** A result that fails its own item only: a batch runner returns it in that item's place. */
export class ItemFailure {
  constructor(readonly error: unknown) {}
}

/**
 * Gathers single calls into batches for a store that pays per round trip: while one batch is
 * under way, the calls that arrive meanwhile wait and go together in the next. The batch size
 * follows the load by itself: one call at a time when idle, many under load. With
 * `minIntervalMs`, batches also start at most that often, for a store whose round trip is so
 * short that the batches would stay small while each statement still costs its fixed share.
 */
export class Batcher<I, R> {
  private queue: { item: I; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  private running = 0;
  private scheduled = false;
  private lastStartMs = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private readonly idle = new Set<() => void>();

  /**
   * @param run Runs one batch; resolves with one result per item, in order (an
   *   {@link ItemFailure} rejects that item alone). A rejection fails every item of the batch.
   * @param options `maxBatch`: most items per batch. `parallel`: batches under way at once.
   *   `minIntervalMs` (default 0, none): least time from one start of batches to the next
   *   (with `parallel` above 1, the batches started together count as one start); calls made
   *   sooner wait for it unless `maxBatch` calls are waiting, and as ever for a free lane.
   *   `now`: a monotonic clock in ms for that interval (default `performance.now`).
   */
  constructor(
    private readonly run: (items: I[]) => Promise<(R | ItemFailure)[]>,
    private readonly options: { maxBatch: number; parallel: number; minIntervalMs?: number; now?: () => number },
  ) {}

  /** Queues one item; resolves with its result once its batch has run. */
  add(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves once nothing is queued or under way. */
  drained(): Promise<void> {
    if (this.queue.length === 0 && this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.add(resolve));
  }

  /** At the end of this turn, so that the calls of one turn share a batch. */
  private schedule(): void {
    if (this.scheduled || this.running >= this.options.parallel) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.queue.length === 0 || this.running >= this.options.parallel) return;
    const interval = this.options.minIntervalMs ?? 0;
    if (interval > 0) {
      const now = this.options.now?.() ?? performance.now();
      // A clock that went back counts as the interval over: no call waits longer than it.
      const wait = now < this.lastStartMs ? 0 : this.lastStartMs + interval - now;
      if (wait > 0 && this.queue.length < this.options.maxBatch) {
        this.timer ??= setTimeout(() => {
          this.timer = undefined;
          this.lastStartMs = -Infinity;
          this.flush();
        }, wait);
        return;
      }
      clearTimeout(this.timer);
      this.timer = undefined;
      this.lastStartMs = now;
    }
    while (this.queue.length > 0 && this.running < this.options.parallel) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      this.running++;
      let results: Promise<(R | ItemFailure)[]>;
      try {
        results = this.run(batch.map((b) => b.item));
      } catch (error) {
        results = Promise.reject(error);
      }
      void results
        .then(
          (values) =>
            batch.forEach((b, i) => {
              const value = values[i];
              if (value instanceof ItemFailure) b.reject(value.error);
              else b.resolve(value as R);
            }),
          (error: unknown) => batch.forEach((b) => b.reject(error)),
        )
        .finally(() => {
          this.running--;
          if (this.queue.length > 0) this.flush();
          else if (this.running === 0) {
            for (const resolve of this.idle) resolve();
            this.idle.clear();
          }
        });
    }
  }
}
