import { RecentSlowest } from './ready-limits.js';
import type { Slots } from './slots.js';

/** How long a slow exchange keeps the jobs held ready shallow: between one and two of these. */
const paceWindowMs = 10_000;

/**
 * The pace of each destination's endpoint, for {@link readyLimits}: how long its exchanges
 * took lately, and how long the ones in flight have run.
 */
export class Pacing {
  /** The slowest exchange lately, per destination id and over all. */
  private readonly slowest = new Map<string, RecentSlowest>();
  private readonly slowestAny = new RecentSlowest(paceWindowMs);

  constructor(private readonly slots: Slots) {}

  /** Records how long an exchange took its slot, response body included. */
  record(destinationId: string, ms: number, nowMs: number): void {
    let pace = this.slowest.get(destinationId);
    if (!pace) this.slowest.set(destinationId, (pace = new RecentSlowest(paceWindowMs)));
    pace.record(ms, nowMs);
    this.slowestAny.record(ms, nowMs);
  }

  /**
   * The slowest exchange lately of one destination (`id`) or of all, for {@link readyLimits}.
   * An exchange still in flight counts with its age so far, so that an endpoint that stops
   * answering makes the next claims shallow at once, not only when its first timeout ends;
   * but only a finished exchange can show that an endpoint is fast.
   */
  slowestExchange(nowMs: number, id?: string): number | undefined {
    const recent = id === undefined ? this.slowestAny.value(nowMs) : this.slowest.get(id)?.value(nowMs);
    if (recent === undefined) return undefined;
    return Math.max(recent, this.slots.oldestAgeMs(nowMs, id));
  }

  /** Forgets the pace of destinations no longer enabled. */
  forget(enabled: ReadonlySet<string>): void {
    for (const id of [...this.slowest.keys()]) if (!enabled.has(id)) this.slowest.delete(id);
  }
}
