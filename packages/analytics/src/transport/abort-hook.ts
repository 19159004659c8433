import type { TransportRequest } from './transport.js';

/**
 * Key under which the client gives the requests it makes a cheaper way to follow an attempt's
 * abort than `signal`: the built-in transports use it, so the AbortSignal is never created.
 * Other transports read `signal` as usual. Not exported from the package.
 */
export const onAbortKey: unique symbol = Symbol('@ferry/analytics onAbort');

/** A request as the client makes it. */
export interface HookedRequest extends TransportRequest {
  /** Runs `fn` when the attempt is aborted (at once if it already is); returns its remover. */
  [onAbortKey]?: (fn: () => void) => () => void;
}

/** Runs `fn` when `signal` aborts (at once if it has); returns the function that stops it. */
export function followSignal(signal: AbortSignal, fn: () => void): () => void {
  if (signal.aborted) {
    fn();
    return () => {};
  }
  signal.addEventListener('abort', fn, { once: true });
  return () => signal.removeEventListener('abort', fn);
}
