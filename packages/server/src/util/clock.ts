/** Time as the pipeline sees it. Injected so retries, timeouts and windows are tested without waiting. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to; for tests. */
export class ManualClock implements Clock {
  private current: number;
  constructor(startMs = Date.parse('2026-01-01T00:00:00.000Z')) {
    this.current = startMs;
  }
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
}
