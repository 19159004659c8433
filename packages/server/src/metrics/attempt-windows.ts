/** The windows the per-destination stats answer for, by name, in ms. */
export const attemptWindowsMs = { '5m': 5 * 60_000, '1h': 60 * 60_000 } as const;

/** The name of a window of {@link attemptWindowsMs}. */
export type AttemptWindowName = keyof typeof attemptWindowsMs;

/** What one destination's attempts were over a window. */
export interface AttemptWindowStats {
  /** Attempts whose outcome was recorded (success, retry or dead). */
  attempts: number;
  succeeded: number;
  /** `succeeded / attempts`; null with no attempt. */
  successRate: number | null;
  /** Median and 99th percentile of one exchange's latency (one request), in ms; null with none. */
  p50Ms: number | null;
  p99Ms: number | null;
}

/** Width of one slot of the ring: a window's edge is this precise. */
export const windowSlotMs = 15_000;
const slots = attemptWindowsMs['1h'] / windowSlotMs;
/**
 * Latency bins grow by a quarter each, from 1 ms: a percentile is the bin's geometric middle,
 * within about 12 % of the true value, and 60 bins reach past 10 minutes.
 */
const binGrowth = 1.25;
const bins = 60;
const logGrowth = Math.log(binGrowth);

function binOf(latencyMs: number): number {
  if (latencyMs <= 1) return 0;
  return Math.min(bins - 1, Math.ceil(Math.log(latencyMs) / logGrowth));
}

/** The value a bin stands for: the geometric middle of its bounds, in whole ms. */
function valueOf(bin: number): number {
  if (bin === 0) return 1;
  return Math.round(Math.pow(binGrowth, bin - 0.5));
}

interface Slot {
  /** Start of the slot, ms; a slot of another time is stale and reset before use. */
  startMs: number;
  attempts: number;
  succeeded: number;
  /** Exchanges per latency bin; allocated on the slot's first exchange. */
  latencies: Uint32Array | undefined;
}

/**
 * Recent attempts per destination, in memory, fed by the events of this server's worker: a ring
 * of one hour in {@link windowSlotMs} slots, each with counts and a latency histogram, so a
 * window's stats are read from at most 240 slots however many attempts there were. On a
 * cluster each node knows its own attempts (docs/admin-api.md says why the store is not read).
 */
export class AttemptWindows {
  private readonly byDestination = new Map<string, Slot[]>();

  /** Counts one attempt's recorded outcome. */
  recordAttempt(destinationId: string, succeeded: boolean, nowMs: number): void {
    const slot = this.slotAt(destinationId, nowMs);
    slot.attempts += 1;
    if (succeeded) slot.succeeded += 1;
  }

  /** Counts one exchange's latency. */
  recordLatency(destinationId: string, latencyMs: number, nowMs: number): void {
    const slot = this.slotAt(destinationId, nowMs);
    slot.latencies ??= new Uint32Array(bins);
    slot.latencies[binOf(latencyMs)]! += 1;
  }

  /** Forgets a destination (deleted). */
  forget(destinationId: string): void {
    this.byDestination.delete(destinationId);
  }

  /** One destination's stats over the window that ends at `nowMs`. */
  stats(destinationId: string, window: AttemptWindowName, nowMs: number): AttemptWindowStats {
    const ring = this.byDestination.get(destinationId);
    const since = slotStart(nowMs) - attemptWindowsMs[window] + windowSlotMs;
    let attempts = 0;
    let succeeded = 0;
    const latencies = new Uint32Array(bins);
    for (const slot of ring ?? []) {
      // The ring is filled as slots are first used: one never used is a hole.
      if (slot === undefined || slot.startMs < since || slot.startMs > nowMs) continue;
      attempts += slot.attempts;
      succeeded += slot.succeeded;
      if (slot.latencies) for (let i = 0; i < bins; i++) latencies[i]! += slot.latencies[i]!;
    }
    return {
      attempts,
      succeeded,
      successRate: attempts === 0 ? null : succeeded / attempts,
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
    };
  }

  private slotAt(destinationId: string, nowMs: number): Slot {
    let ring = this.byDestination.get(destinationId);
    if (ring === undefined) this.byDestination.set(destinationId, (ring = []));
    const startMs = slotStart(nowMs);
    const index = Math.floor(startMs / windowSlotMs) % slots;
    let slot = ring[index];
    if (slot === undefined) ring[index] = slot = { startMs, attempts: 0, succeeded: 0, latencies: undefined };
    else if (slot.startMs !== startMs) {
      slot.startMs = startMs;
      slot.attempts = 0;
      slot.succeeded = 0;
      slot.latencies?.fill(0);
    }
    return slot;
  }
}

function slotStart(nowMs: number): number {
  return Math.floor(nowMs / windowSlotMs) * windowSlotMs;
}

/** The value below which a share `q` of the exchanges fell (nearest rank); null with none. */
function percentile(latencies: Uint32Array, q: number): number | null {
  let total = 0;
  for (const n of latencies) total += n;
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let i = 0; i < bins; i++) {
    seen += latencies[i]!;
    if (seen >= rank) return valueOf(i);
  }
  return valueOf(bins - 1);
}
