/**
 * A process-wide budget of request-body bytes. Each ingestion request reserves the bytes its
 * body may occupy before a byte of it is read and gives them back when its answer is done,
 * so the bodies held at once never exceed the budget, however many clients send at once.
 */
export class BodyBudget {
  #heldBytes = 0;

  /** @param limitBytes the most bytes reserved at once. */
  constructor(readonly limitBytes: number) {}

  /** Reserves `bytes` and returns true, or returns false (reserving nothing) when they do not fit. */
  tryReserve(bytes: number): boolean {
    if (this.#heldBytes + bytes > this.limitBytes) return false;
    this.#heldBytes += bytes;
    return true;
  }

  /** Gives back bytes reserved by {@link tryReserve}. */
  release(bytes: number): void {
    this.#heldBytes -= bytes;
  }
}
