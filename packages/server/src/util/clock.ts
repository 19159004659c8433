/** Time as the pipeline sees it. Injected so retries, timeouts and windows are tested without waiting. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

/** Opaque handle of a timer set through {@link Timers}. */
export type TimerHandle = unknown;

/**
 * Timers as a component that enforces a time limit sees them (the webhook sender). Injected
 * beside a {@link Clock} so a limit can be reached in a test by moving a manual clock.
 */
export interface Timers {
  /** Runs `fn` once, `ms` from now. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; a handle that already ran, or `undefined`, is ignored. */
  clearTimeout(handle: TimerHandle): void;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/** Node's own timers. */
export const systemTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
};

interface ManualTimer {
  atMs: number;
  fn: () => void;
}

/** A clock that only moves when told to; for tests. */
export class ManualClock implements Clock {
  private current: number;
  /** Timers set through {@link timers} that have not run, in the order they were set. */
  private readonly waiting: ManualTimer[] = [];

  /**
   * Timers that run when {@link advance} or {@link set} moves this clock to or past their due
   * time, never by themselves: a component given these reaches its time limits only when the
   * test moves the clock.
   */
  readonly timers: Timers = {
    setTimeout: (fn, ms) => {
      const timer: ManualTimer = { atMs: this.current + Math.max(0, ms), fn };
      this.waiting.push(timer);
      return timer;
    },
    clearTimeout: (handle) => {
      const at = this.waiting.indexOf(handle as ManualTimer);
      if (at >= 0) this.waiting.splice(at, 1);
    },
  };

  constructor(startMs = Date.parse('2026-01-01T00:00:00.000Z')) {
    this.current = startMs;
  }
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.set(this.current + ms);
  }
  /**
   * Moves the clock to `ms`. The timers due by then run first, soonest first (those due at
   * the same time in the order they were set), each seeing the clock at its own due time.
   */
  set(ms: number): void {
    for (;;) {
      let next: ManualTimer | undefined;
      for (const timer of this.waiting) if (timer.atMs <= ms && (!next || timer.atMs < next.atMs)) next = timer;
      if (!next) break;
      this.waiting.splice(this.waiting.indexOf(next), 1);
      this.current = Math.max(this.current, next.atMs);
      next.fn();
    }
    this.current = ms;
  }
}
