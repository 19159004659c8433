import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { DeliverySettings, DestinationConfig } from '../config/model.js';
import type { AttemptContext } from '../destinations/destination-type.js';
import type { WebhookSender } from '../destinations/http/sender.js';
import type { Catalog } from '../routing/catalog.js';
import type { AttemptOutcome, AttemptRecord } from '../model/attempt.js';
import type { ClaimedDelivery, HeldLease, Store } from '../store/store.js';
import type { Clock } from '../util/clock.js';
import { RepeatedErrorLog } from '../util/repeated-error-log.js';
import { redactUrl } from '../config/redact.js';
import { readyLimits, RecentSlowest, type ResolvedDeliverySettings } from './ready-limits.js';
import { decideOutcome } from './retry-policy.js';

/** How long a slow exchange keeps the jobs held ready shallow: between one and two of these. */
const paceWindowMs = 10_000;
/** While claims keep failing the same way (a full disk, a database down), one log line per this long. */
const claimErrorLogIntervalMs = 60_000;

/** What a timeout log line says happens next, by the attempt's outcome. */
const afterTimeout: Record<AttemptOutcome['status'], string> = {
  succeeded: 'another URL answered 2xx, so the event is done and this URL is not retried',
  pending: 'will retry',
  dead: 'the delivery is dead-lettered',
};

/** Lifecycle events of deliveries, named `noun:verb`. */
export interface DeliveryEvents {
  'delivery:succeeded': [{ id: number; destinationId: string; attempts: number }];
  'delivery:retrying': [{ id: number; destinationId: string; nextAttemptAtMs: number; lastError: string }];
  'delivery:dead': [{ id: number; destinationId: string; reason: string; lastError: string }];
  'delivery:lease-lost': [{ id: number }];
  'worker:error': [{ error: unknown }];
}

/** What the worker needs. Time, randomness and transport are injected. */
export interface DeliveryWorkerOptions {
  store: Store;
  catalog: Catalog;
  /** The HTTP transport that destination types which POST (Webhooks) send through. */
  sender: WebhookSender;
  settings: DeliverySettings;
  clock: Clock;
  logger: Logger;
  random?: () => number;
  /** Lease owner name; unique per worker. */
  owner?: string;
}

/**
 * Claims due delivery jobs under a lease and sends them. Concurrency is bounded overall and
 * per destination, so an endpoint that never answers occupies only its own slots.
 */
export class DeliveryWorker extends EventEmitter<DeliveryEvents> {
  readonly owner: string;
  private total = 0;
  private readonly running = new Set<Promise<void>>();
  /** Leased jobs waiting for a free slot, per destination id, in claim order. */
  private readonly ready = new Map<string, { job: ClaimedDelivery; leasedUntilMs: number }[]>();
  /** Jobs in {@link ready} over all destinations, kept as they come and go (read per destination per round). */
  private readyCount = 0;
  private stopped = true;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  /** Set by stop() only (a worker driven by hand through tick() is never "started"). */
  private halted = false;
  /** The loop round in progress, if any. */
  private current: Promise<void> | undefined;
  private rotation = 0;
  private readyRotation = 0;
  /** Jobs whose exchange is over and whose outcome is not yet recorded (still leased). */
  private recording = 0;
  private wakeRequested = false;
  /** Set by a claim round that left a destination alone because too few of its slots were free. */
  private waitingForSlots = false;
  private readonly random: () => number;
  /** The slowest exchange lately, per destination id and over all, for {@link readyLimits}. */
  private readonly slowest = new Map<string, RecentSlowest>();
  private readonly slowestAny = new RecentSlowest(paceWindowMs);
  /** The catalog's list of enabled destinations as {@link forgetInactive} last saw it. */
  private checkedActive: readonly DestinationConfig[] | undefined;
  /** Exchanges in flight (busy slots) per destination id, oldest first (a Set keeps insertion order). */
  private readonly exchanges = new Map<string, Set<{ startedAtMs: number }>>();

  private readonly o: DeliveryWorkerOptions & { settings: ResolvedDeliverySettings };
  private readonly claimErrors: RepeatedErrorLog;
  /** What every attempt gets besides its job and destination. */
  private readonly attemptContext: AttemptContext;

  constructor(options: DeliveryWorkerOptions) {
    super();
    const { settings, store } = options;
    this.o = { ...options, settings: { ...settings, claimBatchSize: settings.claimBatchSize ?? store.defaultClaimBatchSize } };
    this.owner = options.owner ?? `worker-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.random = options.random ?? Math.random;
    this.attemptContext = { timeoutMs: settings.timeoutMs, clock: options.clock, logger: options.logger, http: options.sender };
    this.claimErrors = new RepeatedErrorLog({
      logger: options.logger,
      clock: options.clock,
      intervalMs: claimErrorLogIntervalMs,
      message: 'delivery claim failed; retrying after the poll interval',
      recoveredMessage: 'delivery claims work again',
    });
  }

  /** Starts the polling loop (real timers). Tests may instead call {@link tick} directly. */
  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Asks for a claim round soon, e.g. after ingestion committed new jobs. */
  wake(): void {
    if (this.stopped) return;
    if (this.current) {
      this.wakeRequested = true;
      return;
    }
    this.schedule(0);
  }

  /**
   * Runs the loop after `delayMs`; 0 means at the end of this turn of the event loop
   * (setImmediate, not a 1 ms timer). Many wakes in one turn share one round.
   */
  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (delayMs <= 0) {
      if (this.immediate) return;
      this.clearScheduled();
      this.immediate = setImmediate(() => this.runLoop());
      return;
    }
    this.clearScheduled();
    this.timer = setTimeout(() => this.runLoop(), delayMs);
  }

  /**
   * One loop round at a time: with a store whose claims are real I/O (PostgreSQL), a wake or a
   * timer during a round must not start a second one that claims against the same counters.
   */
  private runLoop(): void {
    this.timer = undefined;
    this.immediate = undefined;
    if (this.current) {
      this.wakeRequested = true;
      return;
    }
    this.current = this.loop().finally(() => (this.current = undefined));
  }

  private clearScheduled(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  private async loop(): Promise<void> {
    let claimed = 0;
    this.waitingForSlots = false;
    try {
      claimed = await this.tick();
      this.claimErrors.resolved();
    } catch (error) {
      this.claimErrors.report(error);
      this.emit('worker:error', { error });
      // Not sooner, even with jobs due: a store that cannot claim now will not a moment later.
      if (!this.stopped) this.schedule(this.o.settings.pollIntervalMs);
      return;
    }
    if (this.stopped) return;
    // Full slots: the next round starts when a job finishes (see process()).
    if (claimed > 0 || this.wakeRequested) {
      this.wakeRequested = false;
      if (this.total < this.o.settings.concurrency) this.schedule(0);
      return;
    }
    // Due work waits for slots that are busy (or for records of finished jobs): the job that
    // frees them wakes the loop, so there is no need to ask the store when the next is due.
    if (this.waitingForSlots && this.total + this.recording > 0) {
      this.schedule(this.o.settings.pollIntervalMs);
      return;
    }
    const next = await this.o.store.nextDueAt(this.o.catalog.enabledDestinations().map((d) => d.id)).catch(() => null);
    if (this.stopped) return;
    if (this.wakeRequested) {
      this.wakeRequested = false;
      this.schedule(0);
      return;
    }
    const untilDue = next === null ? Infinity : Math.max(0, next - this.o.clock.now());
    this.schedule(Math.min(this.o.settings.pollIntervalMs, untilDue));
  }

  /**
   * The slowest exchange lately of one destination (`id`) or of all, for {@link readyLimits}.
   * An exchange still in flight counts with its age so far, so that an endpoint that stops
   * answering makes the next claims shallow at once, not only when its first timeout ends;
   * but only a finished exchange can show that an endpoint is fast.
   */
  private slowestExchange(nowMs: number, id?: string): number | undefined {
    const recent = id === undefined ? this.slowestAny.value(nowMs) : this.slowest.get(id)?.value(nowMs);
    if (recent === undefined) return undefined;
    // A Set keeps insertion order: its first exchange is its oldest.
    const age = (started: Set<{ startedAtMs: number }> | undefined): number => {
      for (const e of started ?? []) return nowMs - e.startedAtMs;
      return 0;
    };
    let oldest = 0;
    if (id !== undefined) oldest = age(this.exchanges.get(id));
    else for (const started of this.exchanges.values()) oldest = Math.max(oldest, age(started));
    return Math.max(recent, oldest);
  }

  /** Busy slots of a destination: its exchanges in flight. */
  private busy(destinationId: string): number {
    return this.exchanges.get(destinationId)?.size ?? 0;
  }

  private recordExchange(destinationId: string, ms: number): void {
    const now = this.o.clock.now();
    let pace = this.slowest.get(destinationId);
    if (!pace) this.slowest.set(destinationId, (pace = new RecentSlowest(paceWindowMs)));
    pace.record(ms, now);
    this.slowestAny.record(ms, now);
  }

  /**
   * One claim round: for every enabled destination with room, lease due jobs and start
   * sending them as far as the concurrency limits allow (the rest wait, leased, for a slot:
   * see {@link readyLimits}). Resolves with the number claimed, before the sends finish.
   */
  async tick(): Promise<number> {
    const { settings } = this.o;
    let claimed = 0;
    // Over all destinations once per round; per destination below.
    const anyExchangeMs = this.slowestExchange(this.o.clock.now());
    // Start each round at the next destination, so that when slots are scarce the ones late
    // in the list are not always offered what is left.
    const active = this.o.catalog.enabledDestinations();
    this.forgetInactive(active);
    const offset = active.length > 0 ? this.rotation++ % active.length : 0;
    for (let i = 0; i < active.length; i++) {
      const destination = active[(offset + i) % active.length]!;
      this.startReady(destination);
      const busy = this.busy(destination.id);
      const ready = this.ready.get(destination.id)?.length ?? 0;
      const nowMs = this.o.clock.now();
      const { perDestination: readyLimit, total: readyTotalLimit } = readyLimits(settings, {
        destination: this.slowestExchange(nowMs, destination.id),
        any: anyExchangeMs,
      });
      // Refill in batches: while a destination holds most of what it may, wait until half of
      // it is free, so that one claim query serves many jobs rather than one each.
      const refillAt = Math.max(1, Math.floor(Math.min(settings.perDestinationConcurrency + readyLimit, settings.claimBatchSize) / 2));
      const room = Math.min(
        settings.perDestinationConcurrency + readyLimit - busy - ready,
        // Jobs waiting for their outcome to be recorded count too: if the store falls behind,
        // claiming stops rather than piling up sent jobs whose records wait in memory.
        settings.concurrency + readyTotalLimit - this.total - this.readyCount - this.recording,
        settings.claimBatchSize,
      );
      if (room <= 0 || (room < refillAt && busy + ready > 0)) {
        this.waitingForSlots = true;
        continue;
      }
      const jobs = await this.o.store.claim({ destinationId: destination.id, owner: this.owner, nowMs, leaseMs: settings.leaseMs, limit: room });
      claimed += jobs.length;
      // Stopped while the claim was under way: start nothing; stop() hands these back.
      if (this.halted) return claimed;
      if (jobs.length === 0) continue;
      let queue = this.ready.get(destination.id);
      if (!queue) this.ready.set(destination.id, (queue = []));
      for (const job of jobs) queue.push({ job, leasedUntilMs: nowMs + settings.leaseMs });
      this.readyCount += jobs.length;
      this.startReady(destination);
    }
    return claimed;
  }

  /** Starts ready jobs of a destination while its slots and the global ones allow. */
  private startReady(destination: DestinationConfig): void {
    const queue = this.ready.get(destination.id);
    if (!queue || queue.length === 0) return;
    const { settings, clock } = this.o;
    let late: HeldLease[] | undefined;
    while (
      queue.length > 0 &&
      this.busy(destination.id) < settings.perDestinationConcurrency &&
      this.total < settings.concurrency
    ) {
      const { job, leasedUntilMs } = queue.shift()!;
      this.readyCount--;
      // A job that waited so long that its lease could run out during its exchange (the head
      // within timeoutMs, then at most 1 s for the body) is not started, so that no two workers
      // ever send it at the same time; it goes back to the queue, due at once, rather than
      // waiting out its lease. (A job claimed for a free slot starts at once and never meets
      // this: the lease rule asks for 2 x timeoutMs + 1 s.)
      if (clock.now() + settings.timeoutMs + 1000 > leasedUntilMs) {
        (late ??= []).push({ id: job.id, leasedUntilMs });
        continue;
      }
      this.track(this.process(job, destination));
    }
    if (late) this.handBack(late, destination.id, 'waited too long for a slot');
  }

  /**
   * Returns to the queue, due again at once, jobs this worker holds but will not send. If that
   * fails they still come back when their leases run out: nothing is lost, so log and go on.
   */
  private handBack(leases: HeldLease[], destinationId: string, why: string): void {
    this.o.logger.debug({ destinationId, jobs: leases.length }, `jobs held ready ${why}; handed back`);
    this.track(
      this.o.store.releaseLeases(this.owner, this.o.clock.now(), leases).then(
        () => this.wake(),
        (error: unknown) => {
          this.o.logger.warn({ err: error, destinationId, jobs: leases.length }, 'jobs held ready could not be handed back; they come back when their leases run out');
          this.emit('worker:error', { error });
        },
      ),
    );
  }

  /**
   * After a slot frees: start ready jobs of every enabled destination (the global limit is
   * shared), beginning at the next destination each time, so that when global slots are
   * scarce the ready jobs of the ones late in the list are not always served last.
   */
  private startAllReady(): void {
    if (this.ready.size === 0) return;
    const active = this.o.catalog.enabledDestinations();
    const offset = active.length > 0 ? this.readyRotation++ % active.length : 0;
    for (let i = 0; i < active.length; i++) this.startReady(active[(offset + i) % active.length]!);
  }

  /**
   * At the first claim round after the catalog changed: jobs held ready for a destination
   * disabled or deleted meanwhile are not sent, and go back to the queue (a deleted
   * destination's are dead letters already, and stay so); what is known of such a
   * destination's pace is forgotten. The catalog's list is the same array until it changes.
   */
  private forgetInactive(active: readonly DestinationConfig[]): void {
    if (active === this.checkedActive) return;
    this.checkedActive = active;
    const enabled = new Set(active.map((d) => d.id));
    for (const [id, queue] of [...this.ready]) {
      if (enabled.has(id)) continue;
      this.readyCount -= queue.length;
      this.ready.delete(id);
      if (queue.length > 0) this.handBack(queue.map((r) => ({ id: r.job.id, leasedUntilMs: r.leasedUntilMs })), id, 'of a destination no longer enabled');
    }
    for (const id of [...this.slowest.keys()]) if (!enabled.has(id)) this.slowest.delete(id);
    for (const [id, set] of [...this.exchanges]) if (set.size === 0 && !enabled.has(id)) this.exchanges.delete(id);
  }

  private track(p: Promise<void>): void {
    this.running.add(p);
    void p.finally(() => this.running.delete(p));
  }

  /** Waits for every send started so far. */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
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
    this.total++;
    const exchange = { startedAtMs: this.o.clock.now() };
    let started = this.exchanges.get(destination.id);
    if (!started) this.exchanges.set(destination.id, (started = new Set()));
    started.add(exchange);
    let released = false;
    // The slot bounds requests to the endpoint, so it frees as soon as the exchange is over:
    // recording the outcome (the job stays leased until then) overlaps the next request.
    const release = (): void => {
      if (released) return;
      released = true;
      // How long the slot was taken, response body included, for the next ready limits.
      started.delete(exchange);
      this.recordExchange(destination.id, this.o.clock.now() - exchange.startedAtMs);
      this.recording++;
      this.total--;
      if (!this.stopped) {
        this.startAllReady();
        this.wake();
      }
    };
    try {
      await this.attempt(job, destination, release);
    } catch (error) {
      // The lease will expire and the job comes back: nothing is lost, so log and go on.
      this.o.logger.error({ err: error, deliveryId: job.id }, 'delivery attempt could not be recorded');
      this.emit('worker:error', { error });
    } finally {
      release();
      this.recording--;
      // A round that found no room (records of finished jobs count against it) can go on now.
      if (!this.stopped && this.waitingForSlots) this.wake();
    }
  }

  private async attempt(job: ClaimedDelivery, destination: DestinationConfig, release: () => void): Promise<void> {
    const { clock, settings, logger } = this.o;
    const firstAttemptAtMs = job.firstAttemptAtMs ?? clock.now();
    // The catalog routes and delivers only destinations of a type it knows.
    const results = await this.o.catalog.types.get(destination.type)!.attempt(job, destination, this.attemptContext);
    release();
    const nowMs = clock.now();
    const outcome: AttemptOutcome = decideOutcome({
      results,
      previousAttempts: job.attemptCount,
      firstAttemptAtMs,
      nowMs,
      settings: settings.retry,
      random: this.random,
    });
    for (const r of results) {
      if (r.errorClass === 'timeout') {
        logger.warn(
          { deliveryId: job.id, destinationId: destination.id, url: redactUrl(r.url), outcome: outcome.status },
          `webhook timed out after ${settings.timeoutMs} ms; ${afterTimeout[outcome.status]}`,
        );
      }
    }
    const attempts: AttemptRecord[] = results.map((r) => ({
      url: redactUrl(r.url),
      startedAtMs: r.startedAtMs,
      latencyMs: Math.round(r.latencyMs),
      statusCode: r.statusCode ?? null,
      errorClass: r.errorClass ?? null,
      errorMessage: r.errorMessage ?? null,
      responseBody: r.responseBody ?? null,
      trigger: job.trigger,
    }));
    const kept = await this.o.store.complete({ id: job.id, owner: this.owner, createdAtMs: job.createdAtMs, kind: job.kind, nowMs, firstAttemptAtMs, attempts, outcome });
    if (!kept) {
      this.emit('delivery:lease-lost', { id: job.id });
      return;
    }
    const base = { id: job.id, destinationId: destination.id };
    if (outcome.status === 'succeeded') {
      // The common case, many thousand times a second: no event object unless someone listens.
      if (this.listenerCount('delivery:succeeded') > 0) this.emit('delivery:succeeded', { ...base, attempts: job.attemptCount + 1 });
    } else if (outcome.status === 'pending') {
      logger.info({ ...base, lastError: outcome.lastError, nextAttemptAt: new Date(outcome.nextAttemptAtMs).toISOString() }, 'delivery will be retried');
      this.emit('delivery:retrying', { ...base, nextAttemptAtMs: outcome.nextAttemptAtMs, lastError: outcome.lastError });
    } else {
      logger.warn({ ...base, reason: outcome.reason, lastError: outcome.lastError }, 'delivery dead-lettered');
      this.emit('delivery:dead', { ...base, reason: outcome.reason, lastError: outcome.lastError });
    }
  }

  /**
   * Stops claiming, gives running sends up to `graceMs` to finish, then hands every job this
   * worker still holds back to the queue so another worker (or the next start) sends it.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopped = true;
    this.halted = true;
    this.clearScheduled();
    // A round in progress finishes its claim first, so that releaseLeases sees those jobs too.
    await this.current;
    // Ready jobs are never started now; releaseLeases below hands them back with the rest.
    this.ready.clear();
    this.readyCount = 0;
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([this.settled(), new Promise<void>((r) => (timeout = setTimeout(r, graceMs)))]);
    if (timeout) clearTimeout(timeout);
    await this.o.store.releaseLeases(this.owner, this.o.clock.now());
  }
}
