import type { IncomingMessage } from 'node:http';

/**
 * True when a request failed because its client went away before its body was complete (a
 * hang-up mid-body surfaces as an `ECONNRESET` "aborted" error from the body stream). That is
 * the client's doing, not a fault of the store or of Ferry: it must not be logged or counted
 * as an outage.
 */
export function isClientAbort(request: IncomingMessage): boolean {
  return !request.complete && request.destroyed;
}
