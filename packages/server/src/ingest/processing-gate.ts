/**
 * Lets tasks run while the bytes they weigh stay within `limitBytes` together; the others wait
 * their turn, first come first served (a heavy task at the head is not overtaken by light
 * ones, so it never starves). A task heavier than the limit runs alone.
 *
 * Ingestion runs each request's processing through one, weighed by its body: a parsed and
 * normalised body takes many times its size on the heap (docs/operations.md gives the
 * measured multiple), so the body budget bounds the raw bytes held and this gate the bytes
 * expanded at once. It is weighed in bytes, not counted in requests: small batches, which
 * expand to little, must not wait behind a count, since requests that wait for their commit
 * together share one commit of the store.
 */
export class ProcessingGate {
  #runningBytes = 0;
  #running = 0;
  readonly #waiting: { weight: number; start: () => void }[] = [];

  constructor(readonly limitBytes: number) {}

  /** Runs `task` once `weight` bytes fit, and gives them back when it settles. */
  async run<T>(weight: number, task: () => Promise<T>): Promise<T> {
    if (this.#waiting.length > 0 || !this.#fits(weight)) await new Promise<void>((start) => this.#waiting.push({ weight, start }));
    else this.#take(weight);
    try {
      return await task();
    } finally {
      this.#running--;
      this.#runningBytes -= weight;
      this.#admitWaiting();
    }
  }

  /** Bytes of the tasks running now. */
  get runningBytes(): number {
    return this.#runningBytes;
  }

  #fits(weight: number): boolean {
    return this.#running === 0 || this.#runningBytes + weight <= this.limitBytes;
  }

  #take(weight: number): void {
    this.#running++;
    this.#runningBytes += weight;
  }

  #admitWaiting(): void {
    while (this.#waiting.length > 0 && this.#fits(this.#waiting[0]!.weight)) {
      const next = this.#waiting.shift()!;
      this.#take(next.weight);
      next.start();
    }
  }
}
