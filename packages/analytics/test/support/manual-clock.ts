import type { Clock, TimerHandle } from '@ferry/analytics';
import { within } from './deadline.js';

interface Timer {
  id: number;
  at: number;
  delayMs: number;
  fn: () => void;
}

/**
 * A clock that only moves when the test says so. Timers fire in due order inside advance();
 * nextTimer() lets a test wait until the client has scheduled a particular delay.
 */
export class ManualClock implements Clock {
  #now: number;
  #nextId = 1;
  #timers = new Map<number, Timer>();
  #watchers: Array<{ match: (delayMs: number) => boolean; resolve: (delayMs: number) => void }> = [];

  constructor(startMs = Date.UTC(2024, 0, 2, 3, 4, 5, 678)) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer = { id: this.#nextId++, at: this.#now + ms, delayMs: ms, fn };
    this.#timers.set(timer.id, timer);
    this.#watchers = this.#watchers.filter((w) => {
      if (!w.match(ms)) return true;
      w.resolve(ms);
      return false;
    });
    return timer.id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle as number);
  }

  /** Delays of the timers still pending. */
  pendingDelays(): number[] {
    return [...this.#timers.values()].map((t) => t.delayMs);
  }

  /**
   * Resolves with the delay of the first timer (pending or future) that `match` accepts;
   * rejects when none is set within the wait limit (of real time).
   */
  nextTimer(match: (delayMs: number) => boolean = () => true): Promise<number> {
    const pending = [...this.#timers.values()].find((t) => match(t.delayMs));
    if (pending) return Promise.resolve(pending.delayMs);
    return within(new Promise((resolve) => this.#watchers.push({ match, resolve })), `a timer matching ${match.toString()}`);
  }

  /** Waits for a timer of exactly `delayMs`, then moves time forward by that much. */
  async advanceThrough(delayMs: number): Promise<void> {
    this.advance(await this.nextTimer((ms) => ms === delayMs));
  }

  /** Moves time forward by `ms`, firing every timer that falls due, in order. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let next: Timer | undefined;
      for (const t of this.#timers.values()) if (t.at <= target && (!next || t.at < next.at)) next = t;
      if (!next) break;
      this.#timers.delete(next.id);
      this.#now = next.at;
      next.fn();
    }
    this.#now = target;
  }
}

/** Lets pending I/O callbacks and microtasks run once. */
export const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
