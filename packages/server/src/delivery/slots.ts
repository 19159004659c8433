/** One exchange holding a slot, from its start. */
export interface Exchange {
  startedAtMs: number;
}

/**
 * The worker's slots: exchanges in flight over all destinations and per destination, and the
 * jobs whose exchange is over and whose outcome is not yet recorded (still leased). A slot
 * bounds requests to an endpoint, so it frees as soon as the exchange is over.
 */
export class Slots {
  /** Exchanges in flight over all destinations. */
  total = 0;
  /** Jobs whose exchange is over and whose outcome is not yet recorded. */
  recording = 0;
  /** Exchanges in flight per destination id, oldest first (a Set keeps insertion order). */
  private readonly exchanges = new Map<string, Set<Exchange>>();

  constructor(private readonly limits: { concurrency: number; perDestinationConcurrency: number }) {}

  /** Busy slots of a destination: its exchanges in flight. */
  busy(destinationId: string): number {
    return this.exchanges.get(destinationId)?.size ?? 0;
  }

  /** Whether a job of this destination may start now, by its own slots and the global ones. */
  free(destinationId: string): boolean {
    return this.busy(destinationId) < this.limits.perDestinationConcurrency && this.total < this.limits.concurrency;
  }

  /** Takes a slot for an exchange starting at `nowMs`. */
  take(destinationId: string, nowMs: number): Exchange {
    this.total++;
    const exchange = { startedAtMs: nowMs };
    let started = this.exchanges.get(destinationId);
    if (!started) this.exchanges.set(destinationId, (started = new Set()));
    started.add(exchange);
    return exchange;
  }

  /** Frees the slot of an exchange that is over; its job now waits for its record ({@link recorded}). */
  release(destinationId: string, exchange: Exchange): void {
    this.exchanges.get(destinationId)?.delete(exchange);
    this.total--;
    this.recording++;
  }

  /** The outcome of a job whose slot was released is recorded (or could not be). */
  recorded(): void {
    this.recording--;
  }

  /** How long the oldest exchange in flight of a destination (`id`), or of all, has run; 0 when none. */
  oldestAgeMs(nowMs: number, id?: string): number {
    // A Set keeps insertion order: its first exchange is its oldest.
    const age = (started: Set<Exchange> | undefined): number => {
      for (const e of started ?? []) return nowMs - e.startedAtMs;
      return 0;
    };
    if (id !== undefined) return age(this.exchanges.get(id));
    let oldest = 0;
    for (const started of this.exchanges.values()) oldest = Math.max(oldest, age(started));
    return oldest;
  }

  /** Forgets idle destinations no longer enabled. */
  forget(enabled: ReadonlySet<string>): void {
    for (const [id, set] of [...this.exchanges]) if (set.size === 0 && !enabled.has(id)) this.exchanges.delete(id);
  }
}
