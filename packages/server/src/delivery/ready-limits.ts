import type { DeliverySettings } from '../config/model.js';

/** Delivery settings with the claim batch size resolved (the file's, or the store's default). */
export type ResolvedDeliverySettings = DeliverySettings & { claimBatchSize: number };

/**
 * How many leased jobs the worker may hold ready beyond its busy slots, so that a slot that
 * frees starts the next job at once and one claim query serves many jobs.
 *
 * A ready job waits for a slot and must then still finish its own attempt inside its lease:
 * the worker never starts one with less than `timeoutMs + 1000` of its lease left. The k-th
 * ready job of a destination starts after about ceil(k / slots) exchanges, so if an exchange
 * takes at most `exchangeMs`, each slot may have
 * `floor((leaseMs − timeoutMs − 1000) / (2 × exchangeMs))` jobs waiting behind it, half of
 * what the lease allows being kept as a margin.
 *
 * `exchangeMs` is the slowest exchange seen lately ({@link RecentSlowest}; the time a slot
 * was taken, response body included, or the age of one still in flight), or `timeoutMs`
 * when none was seen: a destination that answers in a millisecond may hold a whole claim
 * batch ready, one that may take the full timeout holds none with the defaults (12 s lease,
 * 5 s timeout; 5 per slot with a 60 s lease). The limit is worked out on the lease as claimed,
 * so it holds even if no renewal lands. Either way, at most `claimBatchSize` per destination, and over all of them a
 * claim batch for each destination that can be busy at once (`concurrency /
 * perDestinationConcurrency`). If a fast endpoint turns slow while jobs wait, those whose
 * lease (as last renewed) would run out are not started; they are claimed again when it does.
 */
export function readyLimits(
  settings: Pick<ResolvedDeliverySettings, 'leaseMs' | 'timeoutMs' | 'claimBatchSize' | 'perDestinationConcurrency' | 'concurrency'>,
  exchangeMs: { destination: number | undefined; any: number | undefined },
): { perDestination: number; total: number } {
  const { leaseMs, timeoutMs, claimBatchSize, concurrency } = settings;
  // A destination can never have more slots than there are in all.
  const perDestinationConcurrency = Math.min(settings.perDestinationConcurrency, concurrency);
  const perSlot = (slowest: number | undefined): number => {
    const exchange = Math.min(timeoutMs, Math.max(1, slowest ?? timeoutMs));
    return Math.max(0, Math.floor((leaseMs - timeoutMs - 1000) / (2 * exchange)));
  };
  const batchPerSlot = Math.ceil(claimBatchSize / perDestinationConcurrency);
  return {
    perDestination: Math.min(claimBatchSize, perDestinationConcurrency * perSlot(exchangeMs.destination)),
    total: concurrency * Math.min(batchPerSlot, perSlot(exchangeMs.any)),
  };
}

/**
 * The slowest value recorded lately: the larger of the slowest in the current window and in
 * the one before, so that one slow exchange counts for between one and two windows. Undefined
 * once nothing was recorded for two windows.
 */
export class RecentSlowest {
  private current: number | undefined;
  private previous: number | undefined;
  private windowStart: number | undefined;

  constructor(private readonly windowMs: number) {}

  record(value: number, nowMs: number): void {
    this.roll(nowMs);
    if (this.current === undefined || value > this.current) this.current = value;
  }

  value(nowMs: number): number | undefined {
    this.roll(nowMs);
    if (this.previous === undefined) return this.current;
    return this.current === undefined ? this.previous : Math.max(this.current, this.previous);
  }

  private roll(nowMs: number): void {
    if (this.windowStart === undefined) {
      this.windowStart = nowMs;
      return;
    }
    const elapsed = nowMs - this.windowStart;
    if (elapsed < this.windowMs && elapsed >= 0) return;
    // A clock that went back starts a new window too, rather than keeping one forever.
    this.previous = elapsed >= 0 && elapsed < 2 * this.windowMs ? this.current : undefined;
    this.current = undefined;
    this.windowStart = nowMs;
  }
}
