import type { AttemptOutcome } from '../model/attempt.js';

/**
 * What the worker tells its counters (the metrics) of every delivery, as plain calls: at many
 * thousand deliveries a second, an event object per exchange and per success, forwarded through
 * the bus to a listener, cost more than the counting itself. The worker's events are still
 * emitted for whoever listens (the tail, a dashboard); the tally is the path that is always on.
 */
export interface DeliveryTally {
  /** One exchange made (one request; for Webhooks, one URL), its latency in whole ms. */
  exchanged(destinationId: string, latencyMs: number, nowMs: number): void;
  /** One attempt's outcome, once it is recorded in the store. */
  recorded(destinationId: string, outcome: AttemptOutcome['status'], nowMs: number): void;
}

/** One tally that tells each of `tallies` (those defined) in turn; undefined when none is. */
export function allTallies(...tallies: (DeliveryTally | undefined)[]): DeliveryTally | undefined {
  const present = tallies.filter((t): t is DeliveryTally => t !== undefined);
  if (present.length <= 1) return present[0];
  return {
    exchanged: (destinationId, latencyMs, nowMs) => {
      for (const t of present) t.exchanged(destinationId, latencyMs, nowMs);
    },
    recorded: (destinationId, outcome, nowMs) => {
      for (const t of present) t.recorded(destinationId, outcome, nowMs);
    },
  };
}
