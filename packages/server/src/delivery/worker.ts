import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { DeliverySettings, DestinationConfig } from '../config/model.js';
import type { AttemptContext } from '../destinations/destination-type.js';
import type { WebhookSender } from '../destinations/http/sender.js';
import type { Catalog } from '../routing/catalog.js';
import type { AttemptOutcome, AttemptRecord, ExchangeResult } from '../model/attempt.js';
import type { ClaimedDelivery, Store } from '../store/store.js';
import { timersOf, type Clock } from '../util/clock.js';
import { redactUrl } from '../util/redact.js';
import { attemptRecordOf } from './attempt-record.js';
import { CircuitBreakers, type CircuitEvents } from './circuit-breaker.js';
import { circuitSender } from './circuit-sender.js';
import type { SendGuard } from './guards.js';
import { LeaseRenewal } from './lease-renewal.js';
import { Pacing } from './pacing.js';
import type { ResolvedDeliverySettings } from './ready-limits.js';
import type { DeliveryTally } from './delivery-tally.js';
import { decideOutcome, retryableOf } from './retry-policy.js';
import { Scheduler } from './scheduler.js';
import { Slots } from './slots.js';

/** What a timeout log line says happens next, by the attempt's outcome. */
const afterTimeout: Record<AttemptOutcome['status'], string> = {
  succeeded: 'another URL answered 2xx, so the event is done and this URL is not retried',
  pending: 'will retry',
  dead: 'the delivery is dead-lettered',
};

/** Lifecycle events of deliveries and of the circuit breakers, named `noun:verb`. */
export interface DeliveryEvents extends CircuitEvents {
  /** One exchange of an attempt (for Webhooks, one URL), once its outcome is recorded. */
  'delivery:attempted': [
    {
      id: number;
      destinationId: string;
      url: string;
      statusCode: number | null;
      errorClass: string | null;
      latencyMs: number;
      outcome: AttemptOutcome['status'];
    },
  ];
  'delivery:succeeded': [{ id: number; destinationId: string; attempts: number }];
  'delivery:retrying': [{ id: number; destinationId: string; nextAttemptAtMs: number; lastError: string }];
  'delivery:dead': [{ id: number; destinationId: string; reason: string; lastError: string }];
  'delivery:lease-lost': [{ id: number }];
  'worker:error': [{ error: unknown }];
}

/** What the worker needs. Time (timers included), randomness and transport are injected. */
export interface DeliveryWorkerOptions {
  store: Store;
  catalog: Catalog;
  /** The HTTP transport that destination types which POST (Webhooks) send through. */
  sender: WebhookSender;
  settings: DeliverySettings;
  /** Decisions, leases and the poll loop's waits run on it (its `timers`, else Node's). */
  clock: Clock;
  logger: Logger;
  random?: () => number;
  /** Per-endpoint checks before each send (rate limits, circuit breakers); none by default. */
  guards?: readonly SendGuard[];
  /**
   * Lease owner name; unique per live worker. A node's id (the same after a restart) lets the
   * next start hand back at once what a crashed run held. Default: random.
   */
  owner?: string;
  /** Told of every exchange and recorded outcome (the metrics); none by default. */
  tally?: DeliveryTally;
}

/**
 * Claims due delivery jobs under a lease and sends them, each attempt made by its
 * destination's type. Concurrency is bounded overall and per destination, so an endpoint that
 * never answers occupies only its own slots. The claim side (polling, fairness, jobs held
 * ready, guards, hand-backs) is the {@link Scheduler}; slots are {@link Slots}, the pace of
 * each endpoint {@link Pacing}; this class runs attempts, records their outcomes and reports
 * them as events.
 */
export class DeliveryWorker extends EventEmitter<DeliveryEvents> {
  readonly owner: string;
  /** Sends and other tracked work not yet settled, and who waits for there to be none. */
  private running = 0;
  private readonly idle: (() => void)[] = [];
  private readonly slots: Slots;
  private readonly pacing: Pacing;
  private readonly scheduler: Scheduler;
  /** Renews the leases of every job this worker holds, sending or ready. */
  readonly leases: LeaseRenewal;
  private readonly random: () => number;
  private readonly o: DeliveryWorkerOptions & { settings: ResolvedDeliverySettings };
  /** What every attempt gets besides its job and destination. */
  private readonly attemptContext: AttemptContext;
  /** Per destination (its current configuration) whose breaker is on: the context whose transport asks the breaker. */
  private readonly contexts = new WeakMap<DestinationConfig, AttemptContext>();
  /** The circuit breaker of every URL of every destination, on this node; also the first send guard. */
  readonly circuits: CircuitBreakers;

  constructor(options: DeliveryWorkerOptions) {
    super();
    const { settings, store } = options;
    this.o = { ...options, settings: { ...settings, claimBatchSize: settings.claimBatchSize ?? store.defaultClaimBatchSize } };
    this.owner = options.owner ?? `worker-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.random = options.random ?? Math.random;
    this.attemptContext = { timeoutMs: settings.timeoutMs, clock: options.clock, logger: options.logger, http: options.sender };
    this.circuits = new CircuitBreakers({
      clock: options.clock,
      targetsOf: (d) => options.catalog.types.get(d.type)?.targets?.(d.settings),
      perDestinationConcurrency: settings.perDestinationConcurrency,
      emit: (name, ...payload) => this.emit(name, ...(payload as never)),
    });
    // A destination deleted or disabled takes its circuits with it.
    options.catalog.on('catalog:reloaded', () => this.circuits.forget(new Set(options.catalog.enabledDestinations().map((d) => d.id))));
    this.slots = new Slots(settings);
    this.pacing = new Pacing(this.slots);
    this.leases = new LeaseRenewal({
      store,
      owner: this.owner,
      clock: options.clock,
      timers: timersOf(options.clock),
      leaseMs: settings.leaseMs,
      intervalMs: settings.leaseRenewIntervalMs,
      logger: options.logger,
      onLost: (ids) => {
        // Those still waiting are never sent; one being sent finds its lease lost when recorded.
        for (const id of this.scheduler.dropReady(ids)) this.emit('delivery:lease-lost', { id });
      },
      onError: (error) => this.emit('worker:error', { error }),
    });
    this.scheduler = new Scheduler({
      store,
      catalog: options.catalog,
      settings: this.o.settings,
      clock: options.clock,
      timers: timersOf(options.clock),
      logger: options.logger,
      owner: this.owner,
      slots: this.slots,
      pacing: this.pacing,
      guards: [this.circuits, ...(options.guards ?? [])],
      leases: this.leases,
      send: (job, destination) => this.track(this.process(job, destination)),
      track: (work) => this.track(work),
      onError: (error) => this.emit('worker:error', { error }),
    });
  }

  /** Starts the polling loop, on the clock's timers. Tests may instead call {@link tick} directly. */
  start(): void {
    this.scheduler.start();
    this.leases.start();
  }

  /** Asks for a claim round soon, e.g. after ingestion committed new jobs. */
  wake(): void {
    this.scheduler.wake();
  }

  /**
   * One claim round: for every enabled destination with room, lease due jobs and start
   * sending them as far as the concurrency limits allow. Resolves with the number claimed,
   * before the sends finish.
   */
  tick(): Promise<number> {
    return this.scheduler.tick();
  }

  /** Counts `p` as running until it settles: one reaction per send, not a set entry and a `finally` chain. */
  private track(p: Promise<void>): void {
    this.running++;
    p.then(this.untrack, this.untrackFailed);
  }

  private readonly untrack = (): void => {
    if (--this.running > 0) return;
    for (const resolve of this.idle.splice(0)) resolve();
  };

  /** Tracked work handles its own errors; one that escapes is reported, not left unhandled. */
  private readonly untrackFailed = (error: unknown): void => {
    this.emit('worker:error', { error });
    this.untrack();
  };

  /** Waits until no send (or other tracked work) runs: those started so far, and any they start. */
  async settled(): Promise<void> {
    while (this.running > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  /** Claims and sends until nothing is due (for tests and one-shot runs with an injected clock). */
  async runUntilIdle(): Promise<void> {
    for (;;) {
      const claimed = await this.tick();
      await this.settled();
      if (claimed === 0) return;
    }
  }

  private async process(job: ClaimedDelivery, destination: DestinationConfig): Promise<void> {
    const { clock } = this.o;
    const exchange = this.slots.take(destination.id, clock.now());
    let released = false;
    // The slot bounds requests to the endpoint, so it frees as soon as the exchange is over:
    // recording the outcome (the job stays leased until then) overlaps the next request.
    const release = (): void => {
      if (released) return;
      released = true;
      this.slots.release(destination.id, exchange);
      // How long the slot was taken, response body included, for the next ready limits.
      const nowMs = clock.now();
      this.pacing.record(destination.id, nowMs - exchange.startedAtMs, nowMs);
      this.scheduler.slotFreed();
    };
    try {
      await this.attempt(job, destination, release);
    } catch (error) {
      // The lease will expire and the job comes back: nothing is lost, so log and go on.
      this.o.logger.error({ err: error, deliveryId: job.id }, 'delivery attempt could not be recorded');
      this.emit('worker:error', { error });
    } finally {
      release();
      this.slots.recorded();
      this.scheduler.recorded();
    }
  }

  /** The attempt context of a destination: with a transport that asks its circuit breaker when it has one. */
  private contextFor(destination: DestinationConfig): AttemptContext {
    let ctx = this.contexts.get(destination);
    if (!ctx) {
      ctx = !this.circuits.covers(destination)
        ? this.attemptContext
        : { ...this.attemptContext, http: circuitSender(this.circuits, destination, this.o.sender, this.o.clock) };
      this.contexts.set(destination, ctx);
    }
    return ctx;
  }

  private async attempt(job: ClaimedDelivery, destination: DestinationConfig, release: () => void): Promise<void> {
    const { clock, settings, logger } = this.o;
    const firstAttemptAtMs = job.firstAttemptAtMs ?? clock.now();
    let results: ExchangeResult[];
    try {
      // The catalog routes and delivers only destinations of a type it knows.
      results = await this.o.catalog.types.get(destination.type)!.attempt(job, destination, this.contextFor(destination));
    } finally {
      // Whatever came of it, renewals of this lease end here: the record below checks the lease
      // itself, and a renewal racing it must not call it lost; an attempt that threw records
      // nothing, and its job comes back when the lease runs out.
      this.leases.forget(job.id);
    }
    release();
    const nowMs = clock.now();
    const outcome: AttemptOutcome = decideOutcome({
      results,
      previousAttempts: job.attemptCount,
      firstAttemptAtMs,
      nowMs,
      settings: settings.retry,
      random: this.random,
      retryable: retryableOf(destination),
    });
    for (const r of results) {
      if (r.errorClass === 'timeout') {
        logger.warn(
          { deliveryId: job.id, destinationId: destination.id, url: redactUrl(r.url), outcome: outcome.status },
          `webhook timed out after ${settings.timeoutMs} ms; ${afterTimeout[outcome.status]}`,
        );
      }
    }
    const attempts: AttemptRecord[] = results.map((r) => attemptRecordOf(r, job.trigger));
    const kept = await this.o.store.complete({
      id: job.id,
      owner: this.owner,
      createdAtMs: job.createdAtMs,
      kind: job.kind,
      nowMs,
      firstAttemptAtMs,
      attempts,
      outcome,
    });
    if (!kept) {
      this.emit('delivery:lease-lost', { id: job.id });
      return;
    }
    const { tally } = this.o;
    if (tally !== undefined) {
      // Not an exchange: a URL skipped, its circuit open.
      for (const a of attempts) if (a.errorClass !== 'circuit_open') tally.exchanged(destination.id, a.latencyMs, nowMs);
      tally.recorded(destination.id, outcome.status, nowMs);
    }
    // Payloads are written out, not spread from a common object: V8 gives an object made by
    // `{ ...base, more }` a hidden class of its own each time, and a new one per delivery made
    // every reader of these events megamorphic and cost about a fifth of the server's CPU per
    // delivery (docs/performance.md).
    const id = job.id;
    const destinationId = destination.id;
    // Per exchange, many thousand times a second: no event objects unless someone listens.
    if (this.listenerCount('delivery:attempted') > 0)
      for (const a of attempts)
        this.emit('delivery:attempted', {
          id,
          destinationId,
          url: a.url,
          statusCode: a.statusCode,
          errorClass: a.errorClass,
          latencyMs: a.latencyMs,
          outcome: outcome.status,
        });
    if (outcome.status === 'succeeded') {
      // The common case, many thousand times a second: no event object unless someone listens.
      if (this.listenerCount('delivery:succeeded') > 0) this.emit('delivery:succeeded', { id, destinationId, attempts: job.attemptCount + 1 });
    } else if (outcome.status === 'pending') {
      logger.info(
        { id, destinationId, lastError: outcome.lastError, nextAttemptAt: new Date(outcome.nextAttemptAtMs).toISOString() },
        'delivery will be retried',
      );
      this.emit('delivery:retrying', { id, destinationId, nextAttemptAtMs: outcome.nextAttemptAtMs, lastError: outcome.lastError });
    } else {
      logger.warn({ id, destinationId, reason: outcome.reason, lastError: outcome.lastError }, 'delivery dead-lettered');
      this.emit('delivery:dead', { id, destinationId, reason: outcome.reason, lastError: outcome.lastError });
    }
  }

  /**
   * Stops claiming, gives running sends up to `graceMs` to finish, then hands every job this
   * worker still holds back to the queue so another worker (or the next start) sends it.
   */
  async stop(graceMs = 10_000): Promise<void> {
    // Ready jobs are never started now; releaseLeases below hands them back with the rest.
    await this.scheduler.halt();
    // Real time, not the clock's: a stop must end even while a test's manual clock stands still.
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([this.settled(), new Promise<void>((r) => (timeout = setTimeout(r, graceMs)))]);
    if (timeout) clearTimeout(timeout);
    await this.leases.stop();
    await this.o.store.releaseLeases(this.owner, this.o.clock.now());
  }
}
