import type { DestinationConfig } from '../config/model.js';

/**
 * A check consulted before each send (a rate limit, a circuit breaker), per destination: it is
 * given the destination, with every URL it sends to, and may hold all of that destination's
 * sends until a time. (A guard of one URL among several, such as a per-URL breaker, holds the
 * destination while that URL is closed, or lets the job go and leaves the URL to the attempt.)
 * Held, the jobs go back to the queue as they were (no
 * attempt made, none counted or logged, the retry window of a job never attempted not
 * started), and the worker claims none of that destination's jobs before then.
 */
export interface SendGuard {
  /**
   * Before a job of `destination` is sent at `nowMs`: `undefined` lets it go; a time later than
   * `nowMs` holds the destination's sends until then.
   */
  holdUntil(destination: DestinationConfig, nowMs: number): number | undefined;
  /**
   * Optional, asked after {@link holdUntil} let a send go: whether one more send of
   * `destination` may start now (the circuit breaker: a probe out, a ramp full). `false`
   * leaves its ready jobs waiting, leased, until one of its sends ends; so it may say `false`
   * only while one of them is in flight.
   */
  mayStart?(destination: DestinationConfig, nowMs: number): boolean;
}

/**
 * The time the first guard that holds a destination holds it until, or `undefined` when none
 * holds it. The guards after it are not asked: one that lets a send go may take something
 * for it (a rate limit's token), which a send held by another would waste.
 */
export function heldUntil(guards: readonly SendGuard[], destination: DestinationConfig, nowMs: number): number | undefined {
  for (const guard of guards) {
    const t = guard.holdUntil(destination, nowMs);
    if (t !== undefined && t > nowMs) return t;
  }
  return undefined;
}

/** Whether every guard lets one more send of a destination start now ({@link SendGuard.mayStart}). */
export function mayStart(guards: readonly SendGuard[], destination: DestinationConfig, nowMs: number): boolean {
  for (const guard of guards) if (guard.mayStart && !guard.mayStart(destination, nowMs)) return false;
  return true;
}
