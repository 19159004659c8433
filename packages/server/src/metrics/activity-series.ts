import type { Logger } from 'pino';
import type { DeliveryTally } from '../delivery/delivery-tally.js';
import type { AttemptOutcome } from '../model/attempt.js';
import type { EventBus } from '../events/event-bus.js';
import { activityKinds, type ActivityCount, type ActivityCounts, type ActivityKind } from '../store/activity-counts.js';
import { timersOf, type Clock } from '../util/clock.js';

/** How often a node adds its closed minutes to the store: once a minute. */
export const activityFlushIntervalMs = 60_000;

/** Rows of minutes older than this are deleted at each flush: the longest window, and an hour of margin. */
export const activityKeptMs = 25 * 60 * 60 * 1000;

const minuteMs = 60_000;

/** The windows of `GET /admin/v1/series`: how long a bucket is, and how many end with the current one. */
export const seriesWindows = {
  '1h': { bucketSeconds: 60, buckets: 60 },
  '24h': { bucketSeconds: 300, buckets: 288 },
} as const;

/** A window of `GET /admin/v1/series`. */
export type SeriesWindow = keyof typeof seriesWindows;

/** One bucket of a series: its start, and what happened in it across the nodes. */
export type SeriesBucket = { t: string } & Record<ActivityKind, number>;

/** What {@link ActivitySeries} counts from and writes to. */
export interface ActivitySeriesDeps {
  events: EventBus;
  counts: ActivityCounts;
  clock: Clock;
  /** This node's id, the key of its rows: `FERRY_NODE_ID`, or a random one per process. */
  node: string;
  logger: Logger;
  /** Default {@link activityFlushIntervalMs}. */
  flushIntervalMs?: number;
}

/**
 * The per-minute series of the dashboard: messages stored, deliveries succeeded, retried and
 * dead-lettered. Each node counts per minute in memory (messages from the bus's
 * `ingest:accepted`; deliveries as a {@link DeliveryTally} of the worker, like the metrics, so
 * that the worker still builds no `delivery:succeeded` event while nobody listens), and adds the minutes that
 * closed to the store's `activity_counts` once a minute and at stop, deleting rows older than
 * {@link activityKeptMs}; an answer sums the store's rows of its window and this node's
 * counts not yet written. No event or delivery is read: an answer costs the same with a
 * million events stored. A flush and an answer never run at once, so a count is never seen
 * twice or missed while it moves from memory to the store. Counts that could not be written
 * stay in memory for the next flush; those of a node that crashed are lost (at most its
 * last minute or two).
 */
export class ActivitySeries implements DeliveryTally {
  /** This node's counts not yet in the store, by minute start. */
  private readonly pending = new Map<number, Record<ActivityKind, number>>();
  /** Leaves the bus (see the constructor). */
  private readonly unsubscribe: () => void;
  private timer: unknown;
  private running = false;
  /** Flushes and answers, one at a time. */
  private turn: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: ActivitySeriesDeps) {
    const { events } = deps;
    const accepted = (p: { count: number }) => this.add('accepted', p.count, deps.clock.now());
    events.on('ingest:accepted', accepted);
    this.unsubscribe = () => events.off('ingest:accepted', accepted);
  }

  /** Part of {@link DeliveryTally}: exchanges are not counted here. */
  exchanged(): void {}

  /** Part of {@link DeliveryTally}: one attempt's outcome, counted in the minute of `nowMs`. */
  recorded(_destinationId: string, outcome: AttemptOutcome['status'], nowMs: number): void {
    this.add(outcome === 'succeeded' ? 'delivered' : outcome === 'pending' ? 'retried' : 'dead', 1, nowMs);
  }

  /** Flushes once a minute from now on. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule();
  }

  /** Stops counting and flushing, and writes every count kept, the current minute's too. */
  async stop(): Promise<void> {
    this.running = false;
    timersOf(this.deps.clock).clearTimeout(this.timer);
    this.unsubscribe();
    await this.flush(true);
  }

  /**
   * Adds the minutes that closed (every minute kept, with `all`) to the store, and deletes rows
   * past {@link activityKeptMs}. A failure is logged; the counts stay for the next flush.
   */
  flush(all = false): Promise<void> {
    return this.exclusive(async () => {
      const nowMs = this.deps.clock.now();
      const current = Math.floor(nowMs / minuteMs) * minuteMs;
      const written: ActivityCount[] = [];
      for (const [minute, counts] of this.pending) {
        if (!all && minute >= current) continue;
        for (const kind of activityKinds) if (counts[kind] > 0) written.push({ minuteMs: minute, kind, count: counts[kind] });
      }
      try {
        await this.deps.counts.add(this.deps.node, written, nowMs - activityKeptMs);
      } catch (err) {
        this.deps.logger.warn({ err, minutes: new Set(written.map((c) => c.minuteMs)).size }, 'activity counts not written; kept for the next flush');
        return;
      }
      // Counts that came while the write ran stay: only what was written is taken off.
      for (const c of written) {
        const counts = this.pending.get(c.minuteMs)!;
        counts[c.kind] -= c.count;
        if (activityKinds.every((k) => counts[k] === 0)) this.pending.delete(c.minuteMs);
      }
    });
  }

  /** The buckets of a window, oldest first, ending with the current one, zero-filled. */
  series(window: SeriesWindow): Promise<{ bucketSeconds: number; buckets: SeriesBucket[] }> {
    return this.exclusive(async () => {
      const { bucketSeconds, buckets: count } = seriesWindows[window];
      const size = bucketSeconds * 1000;
      const last = Math.floor(this.deps.clock.now() / size) * size;
      const first = last - (count - 1) * size;
      const sums = Array.from({ length: count }, () => ({ accepted: 0, delivered: 0, retried: 0, dead: 0 }));
      const add = (minute: number, kind: ActivityKind, n: number) => {
        const at = Math.floor((minute - first) / size);
        if (at >= 0 && at < count) sums[at]![kind] += n;
      };
      for (const c of await this.deps.counts.totals(first)) add(c.minuteMs, c.kind, c.count);
      for (const [minute, counts] of this.pending) for (const kind of activityKinds) add(minute, kind, counts[kind]);
      return { bucketSeconds, buckets: sums.map((s, i) => ({ t: new Date(first + i * size).toISOString(), ...s })) };
    });
  }

  private add(kind: ActivityKind, n: number, nowMs: number): void {
    if (n === 0) return;
    const minute = Math.floor(nowMs / minuteMs) * minuteMs;
    let counts = this.pending.get(minute);
    if (!counts) this.pending.set(minute, (counts = { accepted: 0, delivered: 0, retried: 0, dead: 0 }));
    counts[kind] += n;
  }

  private schedule(): void {
    this.timer = timersOf(this.deps.clock).setTimeout(() => {
      if (!this.running) return;
      void this.flush().finally(() => {
        if (this.running) this.schedule();
      });
    }, this.deps.flushIntervalMs ?? activityFlushIntervalMs);
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.turn.then(work, work);
    this.turn = run.catch(() => {});
    return run;
  }
}
