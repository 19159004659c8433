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
    // Node and Bun return an object with unref; Deno returns a number it unrefs on request;
    // edge workers have nothing to unref and end with their request anyway.
    if (typeof t === 'number') (globalThis as { Deno?: { unrefTimer?: (id: number) => void } }).Deno?.unrefTimer?.(t);
    else (t as { unref?: () => void }).unref?.();
    return t;
  },
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
