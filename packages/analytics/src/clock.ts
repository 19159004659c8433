/** Opaque handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = unknown;

/**
 * Time as the client sees it. Injected so tests drive flush intervals, retry delays and
 * close timeouts without waiting.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` after `ms`. Must not keep the process alive on its own. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** The real clock. Timers are unref'd: a pending flush never holds a process open. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    // unref exists in Node, Bun and Deno; plain numbers elsewhere have nothing to unref.
    (t as { unref?: () => void }).unref?.();
    return t;
  },
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
