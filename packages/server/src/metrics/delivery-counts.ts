import type { DeliveryTally } from '../delivery/delivery-tally.js';
import type { AttemptOutcome } from '../model/attempt.js';
import type { AttemptWindows } from './attempt-windows.js';

/** What one destination's deliveries were on this server since it started. */
interface Counts {
  success: number;
  retry: number;
  dead: number;
  /** Exchanges per bucket of the latency histogram, not cumulative; the last is above every bound. */
  buckets: Float64Array;
  sumSeconds: number;
  exchanges: number;
}

/** A series as prom-client's registry writes it (the shape of its own metrics' `get()`). */
interface Exported {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: { value: number; labels: Record<string, string | number>; metricName?: string }[];
  aggregator: 'sum';
}

/** A series the registry can hold and write: what prom-client asks of a metric it scrapes. */
export interface ScrapedSeries {
  readonly name: string;
  readonly help: string;
  readonly type: Exported['type'];
  readonly aggregator: 'sum';
  get(): Exported;
}

const outcomeLabel = { succeeded: 'success', pending: 'retry', dead: 'dead' } as const;

/**
 * The delivery counters and latency histogram, kept as plain numbers that the worker updates
 * directly ({@link DeliveryTally}) and that a scrape reads: prom-client's own label children
 * hash their labels and build a closure on every call, which at many thousand deliveries a
 * second cost more than the count. The same calls feed the per-destination stats' windows.
 */
export class DeliveryCounts implements DeliveryTally {
  private readonly byDestination = new Map<string, Counts>();

  /**
   * @param boundsSeconds Upper bounds of the histogram's buckets, ascending.
   * @param windows The recent attempts of the per-destination stats, fed from the same calls.
   */
  constructor(
    private readonly boundsSeconds: readonly number[],
    private readonly windows: AttemptWindows,
  ) {}

  exchanged(destinationId: string, latencyMs: number, nowMs: number): void {
    const c = this.of(destinationId);
    const seconds = latencyMs / 1000;
    const bounds = this.boundsSeconds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    c.buckets[i]! += 1;
    c.sumSeconds += seconds;
    c.exchanges += 1;
    this.windows.recordLatency(destinationId, latencyMs, nowMs);
  }

  recorded(destinationId: string, outcome: AttemptOutcome['status'], nowMs: number): void {
    this.of(destinationId)[outcomeLabel[outcome]] += 1;
    this.windows.recordAttempt(destinationId, outcome === 'succeeded', nowMs);
  }

  /** `ferry_delivery_attempts_total`, by destination and outcome, as the registry writes it. */
  attemptsSeries(name: string, help: string): ScrapedSeries {
    const series = (): Exported['values'] => {
      const values: Exported['values'] = [];
      for (const [destination, c] of this.byDestination)
        for (const outcome of ['success', 'retry', 'dead'] as const) values.push({ value: c[outcome], labels: { destination, outcome } });
      return values;
    };
    return { name, help, type: 'counter', aggregator: 'sum', get: () => ({ name, help, type: 'counter', values: series(), aggregator: 'sum' }) };
  }

  /** `ferry_delivery_duration_seconds`, by destination, as the registry writes a histogram. */
  durationSeries(name: string, help: string): ScrapedSeries {
    const series = (): Exported['values'] => {
      const values: Exported['values'] = [];
      for (const [destination, c] of this.byDestination) {
        if (c.exchanges === 0) continue;
        let cumulative = 0;
        this.boundsSeconds.forEach((le, i) => {
          cumulative += c.buckets[i]!;
          values.push({ metricName: `${name}_bucket`, value: cumulative, labels: { destination, le } });
        });
        values.push({ metricName: `${name}_bucket`, value: c.exchanges, labels: { destination, le: '+Inf' } });
        values.push({ metricName: `${name}_sum`, value: c.sumSeconds, labels: { destination } });
        values.push({ metricName: `${name}_count`, value: c.exchanges, labels: { destination } });
      }
      return values;
    };
    return { name, help, type: 'histogram', aggregator: 'sum', get: () => ({ name, help, type: 'histogram', values: series(), aggregator: 'sum' }) };
  }

  private of(destinationId: string): Counts {
    let c = this.byDestination.get(destinationId);
    if (c === undefined) {
      c = { success: 0, retry: 0, dead: 0, buckets: new Float64Array(this.boundsSeconds.length + 1), sumSeconds: 0, exchanges: 0 };
      this.byDestination.set(destinationId, c);
    }
    return c;
  }
}
