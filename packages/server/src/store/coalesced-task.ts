import type { Clock, TimerHandle, Timers } from '../util/clock.js';

/**
 * A costly task (a WAL truncation, a VACUUM) that many events ask for, run at most once per
 * `intervalMs` on the clock: a request within the interval after a run waits for the end of
 * it, and every request made meanwhile is served by that one run. A run that fails is tried
 * again an interval later.
 */
export class CoalescedTask {
  private lastRunMs = Number.NEGATIVE_INFINITY;
  /** The wait for the end of the interval (on the injected timers). */
  private timer: TimerHandle | undefined;
  /** A run due now, at the next turn of the event loop. */
  private immediate: NodeJS.Immediate | undefined;
  private waiting: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  private running = false;
  /** A run was asked for, or failed, and none has succeeded since. */
  private owed = false;
  private closed = false;

  constructor(private readonly options: { run: () => Promise<void> | void; clock: Clock; timers: Timers; intervalMs: number }) {}

  /**
   * Asks for a run. Resolves once a run that started after this request has finished, or
   * when {@link close} gave the task up; rejects with the error of a run that failed.
   */
  request(): Promise<void> {
    if (this.closed) return Promise.resolve();
    const done = new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }));
    this.owed = true;
    this.arm();
    return done;
  }

  /** Gives pending requests up (they resolve) and sets no timer any more. */
  close(): void {
    this.closed = true;
    this.options.timers.clearTimeout(this.timer);
    clearImmediate(this.immediate);
    this.timer = this.immediate = undefined;
    for (const w of this.waiting.splice(0)) w.resolve();
  }

  private arm(): void {
    if (this.closed || this.timer !== undefined || this.immediate !== undefined || this.running || !this.owed) return;
    const waitMs = this.lastRunMs + this.options.intervalMs - this.options.clock.now();
    if (waitMs <= 0) {
      // At the next turn, not now: the requests of this turn share the run.
      this.immediate = setImmediate(() => {
        this.immediate = undefined;
        void this.runNow();
      });
      return;
    }
    this.timer = this.options.timers.setTimeout(() => {
      this.timer = undefined;
      if (this.options.clock.now() < this.lastRunMs + this.options.intervalMs) this.arm();
      else void this.runNow();
    }, waitMs);
    // A wait of minutes must not keep a process alive that has nothing else to do (Node's timers have unref; a manual clock's do not).
    (this.timer as { unref?: () => void }).unref?.();
  }

  private async runNow(): Promise<void> {
    if (this.closed) return;
    const served = this.waiting.splice(0);
    this.lastRunMs = this.options.clock.now();
    this.owed = false;
    this.running = true;
    try {
      await this.options.run();
      for (const w of served) w.resolve();
    } catch (error) {
      this.owed = true;
      for (const w of served) w.reject(error);
    } finally {
      this.running = false;
      this.arm();
    }
  }
}
