/** The share of a {@link BodyBudget} that requests without a header key may hold together. */
export const keylessShare = 0.25;

/** Bytes reserved in a {@link BodyBudget}; {@link release} gives them back (once, however often it is called). */
export interface BodyReservation {
  release(): void;
}

/**
 * A process-wide budget of request-body bytes. Each ingestion request reserves the bytes its
 * body may occupy before a byte of it is read and gives them back when its answer is done,
 * so the bodies held at once never exceed the budget, however many clients send at once.
 *
 * Requests that carry no key in a header (their key may be in the body, so anyone can send
 * them) hold at most {@link keylessShare} of the budget together: strangers cannot take the
 * room that clients with a valid key need.
 */
export class BodyBudget {
  #heldBytes = 0;
  #keylessHeldBytes = 0;

  /** @param limitBytes the most bytes reserved at once. */
  constructor(readonly limitBytes: number) {}

  /** Bytes reserved now, by every request. */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  /** Bytes reserved now by requests without a header key. */
  get keylessHeldBytes(): number {
    return this.#keylessHeldBytes;
  }

  /** Reserves `bytes`, or returns undefined (reserving nothing) when they do not fit. */
  tryReserve(bytes: number, options: { keyless: boolean }): BodyReservation | undefined {
    if (this.#heldBytes + bytes > this.limitBytes) return undefined;
    if (options.keyless && this.#keylessHeldBytes + bytes > this.limitBytes * keylessShare) return undefined;
    this.#heldBytes += bytes;
    if (options.keyless) this.#keylessHeldBytes += bytes;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#heldBytes -= bytes;
        if (options.keyless) this.#keylessHeldBytes -= bytes;
      },
    };
  }
}
