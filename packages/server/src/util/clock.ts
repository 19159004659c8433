/**
 * Time as the pipeline sees it, timers included. Injected so retries, timeouts, waits and
 * windows are tested without waiting.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Timers that run on this clock; without them, Node's own ({@link timersOf}). */
  readonly timers?: Timers;
}

/** Opaque handle of a timer set through {@link Timers}. */
export type TimerHandle = unknown;

/**
 * Timers as a component that waits or enforces a time limit sees them (the webhook sender, the
 * delivery worker's poll loop, the audience sync and catalogue refresh intervals). They come
 * with a {@link Clock}, so a limit is reached in a test by moving a manual clock.
 */
export interface Timers {
  /** Runs `fn` once, `ms` from now. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; a handle that already ran, or `undefined`, is ignored. */
  clearTimeout(handle: TimerHandle): void;
}

/**
 * Node's own timers. None keeps the process alive by itself: what a timer waits for (a
 * request, a server) does.
 */
export const systemTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
};

/** The wall clock, with Node's timers. */
export const systemClock: Clock = { now: () => Date.now(), timers: systemTimers };

/** The timers of a clock: its own, or Node's when it brings none. */
export function timersOf(clock: Clock): Timers {
  return clock.timers ?? systemTimers;
}

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
  /**
   * The due times of the timers set and not yet run, soonest first: a test sees that a
   * component sleeps until an exact time, rather than guessing it has had turns enough to act.
   */
  pendingTimers(): number[] {
    return this.waiting.map((t) => t.atMs).sort((a, b) => a - b);
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
