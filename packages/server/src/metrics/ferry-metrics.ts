import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import type { EventBus } from '../events/event-bus.js';
import type { FerryEvents } from '../events/catalogue.js';
import type { BacklogReads } from '../store/backlog.js';
import type { Clock } from '../util/clock.js';
import { AttemptWindows } from './attempt-windows.js';
import { DeliveryCounts } from './delivery-counts.js';
import { registerStoreMetrics, type StoreMetricsDeps } from './store-metrics.js';

/** What the metrics read: the bus they count from, the store's backlog, the destinations to show. */
export interface FerryMetricsDeps {
  events: EventBus;
  backlog: Pick<BacklogReads, 'backlog'>;
  /** Destinations to show a backlog for even when nothing waits (a zero is a value to alert on). */
  destinationIds(): string[];
  clock: Clock;
  /** The store's size and rows, and the pruner's work (`store-metrics.ts`); without it, no such series. */
  storeSize?: StoreMetricsDeps;
}

/**
 * Buckets of `ferry_delivery_duration_seconds`, in seconds: from a receiver on the same
 * network to one at the default 30 s time limit.
 */
export const deliveryDurationBucketsSeconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The series of docs/operations.md ("Monitoring"), whose names and labels are a contract
 * (operators build alerts on them), in a registry of this server's own: several servers in one
 * process (tests, an application embedding two) keep apart. Delivery attempts and their latency
 * are counted by the worker's direct calls ({@link DeliveryCounts}), the rarer happenings
 * (ingestion, filters, breakers) from events of the bus; the backlog gauges are read from the
 * store at each scrape, so on a cluster every node shows the whole backlog. The same counts
 * feed the per-destination stats' recent attempts ({@link AttemptWindows}).
 */
export class FerryMetrics {
  /** Prometheus registry of this server: Ferry's series and Node's process defaults. */
  readonly registry = new Registry();
  /** Recent attempts per destination, for `GET /admin/v1/destinations/{id}/stats`. */
  readonly windows = new AttemptWindows();
  /** Deliveries and their latency, counted by the worker as it records them (its `tally`). */
  readonly deliveries = new DeliveryCounts(deliveryDurationBucketsSeconds, this.windows);
  private readonly pending: Gauge<'destination'>;
  private readonly oldestAge: Gauge<'destination'>;
  private readonly dead: Gauge<'destination'>;
  private readonly detach: (() => void)[] = [];

  constructor(private readonly deps: FerryMetricsDeps) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const ingested = new Counter({
      name: 'ferry_ingest_messages_total',
      help: 'Messages ingested, by source and outcome: accepted (stored), duplicate (already stored), rejected (refused, nothing stored).',
      labelNames: ['source', 'outcome'],
      registers,
    });
    const filtered = new Counter({
      name: 'ferry_delivery_filtered_total',
      help: "Calls a destination's filter dropped at ingestion (no delivery made), by destination.",
      labelNames: ['destination'],
      registers,
    });
    // Counted by the worker's direct calls (DeliveryCounts), read at each scrape.
    for (const series of [
      this.deliveries.attemptsSeries(
        'ferry_delivery_attempts_total',
        'Delivery attempts recorded, by destination and outcome: success, retry (to be retried), dead (dead-lettered).',
      ),
      this.deliveries.durationSeries(
        'ferry_delivery_duration_seconds',
        "One delivery request's latency (one exchange: for Webhooks, one URL), by destination.",
      ),
    ])
      this.registry.registerMetric(series as unknown as Metric);
    this.pending = new Gauge({
      name: 'ferry_deliveries_pending',
      help: 'Deliveries waiting to be sent (due, in flight or waiting for a retry), by destination; read from the store.',
      labelNames: ['destination'],
      registers,
    });
    this.oldestAge = new Gauge({
      name: 'ferry_delivery_oldest_pending_age_seconds',
      help: 'Age of the oldest pending delivery, since it was created, by destination; 0 with none pending. Read from the store.',
      labelNames: ['destination'],
      registers,
    });
    this.dead = new Gauge({
      name: 'ferry_dead_letters',
      help: 'Dead letters (replayable), by destination; read from the store.',
      labelNames: ['destination'],
      registers,
    });

    const circuitState = new Gauge({
      name: 'ferry_circuit_state',
      help: "A URL's circuit breaker on this node, by destination and URL: 0 closed, 1 half-open (its probe out), 2 open.",
      labelNames: ['destination', 'url'],
      registers,
    });
    const circuitTransitions = new Counter({
      name: 'ferry_circuit_transitions_total',
      help: 'Circuit breaker state changes on this node, by destination, URL and the state entered (open, half_open, closed).',
      labelNames: ['destination', 'url', 'state'],
      registers,
    });
    const rateLimited = new Counter({
      name: 'ferry_delivery_rate_limited_total',
      help: "Times a destination's rate limit held its sends (its jobs wait in the queue unsent), by destination.",
      labelNames: ['destination'],
      registers,
    });
    const autoDisabled = new Counter({
      name: 'ferry_destinations_auto_disabled_total',
      help: 'Destinations disabled by this server for failing without a single success for their autoDisableAfterMs, by destination.',
      labelNames: ['destination'],
      registers,
    });

    if (deps.storeSize) registerStoreMetrics(this.registry, deps.storeSize);

    const { windows } = this;
    const { clock } = deps;
    this.listen('breaker:opened', ({ destinationId, url }) => {
      circuitState.set({ destination: destinationId, url }, 2);
      circuitTransitions.inc({ destination: destinationId, url, state: 'open' });
    });
    this.listen('breaker:half-open', ({ destinationId, url }) => {
      circuitState.set({ destination: destinationId, url }, 1);
      circuitTransitions.inc({ destination: destinationId, url, state: 'half_open' });
    });
    this.listen('breaker:closed', ({ destinationId, url, reason }) => {
      circuitTransitions.inc({ destination: destinationId, url, state: 'closed' });
      // A circuit dropped with its URL or destination leaves the scrape rather than showing 0 forever.
      if (reason === 'probe_succeeded') circuitState.set({ destination: destinationId, url }, 0);
      else circuitState.remove({ destination: destinationId, url });
    });
    this.listen('delivery:rate-limited', ({ destinationId }) => rateLimited.inc({ destination: destinationId }));
    this.listen('destination:auto-disabled', ({ destinationId }) => autoDisabled.inc({ destination: destinationId }));
    this.listen('ingest:accepted', ({ sourceId, count, duplicates }) => {
      if (count > 0) ingested.inc({ source: sourceId, outcome: 'accepted' }, count);
      if (duplicates > 0) ingested.inc({ source: sourceId, outcome: 'duplicate' }, duplicates);
    });
    this.listen('ingest:filtered', ({ filtered: counts }) => {
      const nowMs = clock.now();
      for (const { destinationId, count } of counts) {
        filtered.inc({ destination: destinationId }, count);
        windows.recordFiltered(destinationId, count, nowMs);
      }
    });
    this.listen('ingest:rejected', ({ sourceId, rejected }) => ingested.inc({ source: sourceId, outcome: 'rejected' }, rejected.length));
  }

  /** The Prometheus text of every series, the backlog read from the store now. */
  async scrape(): Promise<{ contentType: string; text: string }> {
    // Scrapes that overlap share one read of the backlog (a pass over the pending jobs' index):
    // several Prometheus servers, or a caller hammering a public endpoint, cost one read at a time.
    this.backlogRead ??= this.readBacklog().finally(() => (this.backlogRead = undefined));
    await this.backlogRead;
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }

  /** Stops counting (the server stops). */
  close(): void {
    for (const off of this.detach.splice(0)) off();
  }

  private backlogRead: Promise<void> | undefined;

  private async readBacklog(): Promise<void> {
    const rows = await this.deps.backlog.backlog();
    const nowMs = this.deps.clock.now();
    // Reset, so a destination deleted with nothing left behind leaves the scrape.
    for (const g of [this.pending, this.oldestAge, this.dead]) g.reset();
    for (const id of this.deps.destinationIds()) {
      const destination = { destination: id };
      this.pending.set(destination, 0);
      this.oldestAge.set(destination, 0);
      this.dead.set(destination, 0);
    }
    for (const r of rows) {
      const destination = { destination: r.destinationId };
      this.pending.set(destination, r.pending);
      this.oldestAge.set(destination, r.oldestPendingCreatedAtMs === null ? 0 : Math.max(0, nowMs - r.oldestPendingCreatedAtMs) / 1000);
      this.dead.set(destination, r.dead);
    }
  }

  private listen<K extends keyof FerryEvents>(name: K, listener: (payload: FerryEvents[K]) => void): void {
    this.deps.events.on(name, listener);
    this.detach.push(() => this.deps.events.off(name, listener));
  }
}
