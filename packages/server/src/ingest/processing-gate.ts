/**
 * Lets at most `limit` tasks run at once; the others wait their turn, first come first served.
 * Ingestion runs each request's processing through one, because a parsed and normalised body
 * takes many times its size on the heap (docs/operations.md gives the measured multiple):
 * the body budget bounds the raw bytes held, this gate bounds the bodies expanded at once.
 */
export class ProcessingGate {
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(readonly limit: number) {}

  /** Runs `task` once a slot is free, and frees the slot when it settles. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.limit) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#running++;
    try {
      return await task();
    } finally {
      // The slot passes straight to the next in line, or is freed.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}
