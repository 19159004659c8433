import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { DeliverySettings, DestinationConfig } from '../config/model.js';
import type { SendResult, WebhookSender } from '../destinations/webhooks/sender.js';
import { signatureFor, webhookHeaders } from '../destinations/webhooks/request.js';
import type { Catalog } from '../routing/catalog.js';
import type { AttemptOutcome, AttemptRecord, ClaimedDelivery, Store } from '../store/store.js';
import type { Clock } from '../util/clock.js';
import { decideOutcome } from './retry-policy.js';

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
  private readonly inFlight = new Map<string, number>();
  private total = 0;
  private readonly running = new Set<Promise<void>>();
  private stopped = true;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private ticking = false;
  private wakeRequested = false;
  /** Set by a claim round that left a destination alone because too few of its slots were free. */
  private waitingForSlots = false;
  private readonly random: () => number;

  constructor(private readonly o: DeliveryWorkerOptions) {
    super();
    this.owner = o.owner ?? `worker-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.random = o.random ?? Math.random;
  }

  /** Starts the polling loop (real timers). Tests may instead call {@link tick} directly. */
  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Asks for a claim round soon, e.g. after ingestion committed new jobs. */
  wake(): void {
    if (this.stopped) return;
    if (this.ticking) {
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
      this.immediate = setImmediate(() => void this.loop());
      return;
    }
    this.clearScheduled();
    this.timer = setTimeout(() => void this.loop(), delayMs);
  }

  private clearScheduled(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  private async loop(): Promise<void> {
    this.timer = undefined;
    this.immediate = undefined;
    let claimed = 0;
    this.waitingForSlots = false;
    try {
      claimed = await this.tick();
    } catch (error) {
      this.o.logger.error({ err: error }, 'delivery claim failed; retrying after the poll interval');
      this.emit('worker:error', { error });
    }
    if (this.stopped) return;
    // Full slots: the next round starts when a job finishes (see process()).
    if (claimed > 0 || this.wakeRequested) {
      this.wakeRequested = false;
      if (this.total < this.o.settings.concurrency) this.schedule(0);
      return;
    }
    // Due work waits for slots that are busy: the job that frees them wakes the loop, so
    // there is no need to ask the store when the next job is due.
    if (this.waitingForSlots && this.total > 0) {
      this.schedule(this.o.settings.pollIntervalMs);
      return;
    }
    const next = await this.o.store.nextDueAt(this.activeDestinations().map((d) => d.id)).catch(() => null);
    const untilDue = next === null ? Infinity : Math.max(0, next - this.o.clock.now());
    this.schedule(Math.min(this.o.settings.pollIntervalMs, untilDue));
  }

  private activeDestinations(): DestinationConfig[] {
    return this.o.catalog.destinations().filter((d) => d.enabled);
  }

  /**
   * One claim round: for every enabled destination with free slots, lease due jobs and start
   * sending them. Resolves with the number claimed, before the sends finish.
   */
  async tick(): Promise<number> {
    this.ticking = true;
    try {
      const { settings } = this.o;
      let claimed = 0;
      // Refill in batches: while most of a destination's slots are busy, wait until a quarter
      // of them are free, so that one claim query serves several jobs rather than one each.
      const refillAt = Math.max(1, Math.floor(Math.min(settings.perDestinationConcurrency, settings.claimBatchSize) / 4));
      for (const destination of this.activeDestinations()) {
        const busy = this.inFlight.get(destination.id) ?? 0;
        const free = Math.min(settings.perDestinationConcurrency - busy, settings.concurrency - this.total, settings.claimBatchSize);
        if (free <= 0 || (free < refillAt && busy > 0)) {
          this.waitingForSlots = true;
          continue;
        }
        const jobs = await this.o.store.claim({
          destinationId: destination.id,
          owner: this.owner,
          nowMs: this.o.clock.now(),
          leaseMs: settings.leaseMs,
          limit: free,
        });
        claimed += jobs.length;
        for (const job of jobs) this.track(this.process(job, destination));
      }
      return claimed;
    } finally {
      this.ticking = false;
    }
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
    this.inFlight.set(destination.id, (this.inFlight.get(destination.id) ?? 0) + 1);
    this.total++;
    try {
      await this.attempt(job, destination);
    } catch (error) {
      // The lease will expire and the job comes back: nothing is lost, so log and go on.
      this.o.logger.error({ err: error, deliveryId: job.id }, 'delivery attempt could not be recorded');
      this.emit('worker:error', { error });
    } finally {
      this.inFlight.set(destination.id, (this.inFlight.get(destination.id) ?? 1) - 1);
      this.total--;
      if (!this.stopped) this.wake();
    }
  }

  private async attempt(job: ClaimedDelivery, destination: DestinationConfig): Promise<void> {
    const { clock, settings, sender, logger } = this.o;
    const startedAtMs = clock.now();
    const firstAttemptAtMs = job.firstAttemptAtMs ?? startedAtMs;
    const body = Buffer.from(job.body);
    const signature = signatureFor(destination.settings, body);
    const results: SendResult[] = await Promise.all(
      destination.settings.webhooks.map((entry) =>
        sender.send({ url: entry.url, headers: webhookHeaders(entry, signature), body, timeoutMs: settings.timeoutMs }),
      ),
    );
    const nowMs = clock.now();
    const outcome: AttemptOutcome = decideOutcome({
      results,
      previousAttempts: job.trigger === 'manual' ? 0 : job.attemptCount,
      firstAttemptAtMs,
      nowMs,
      settings: settings.retry,
      random: this.random,
    });
    for (const r of results) {
      if (r.errorClass === 'timeout')
        logger.warn({ deliveryId: job.id, destinationId: destination.id, url: r.url }, `webhook timed out after ${settings.timeoutMs} ms; will retry`);
    }
    const attempts: AttemptRecord[] = results.map((r) => ({
      url: r.url,
      startedAtMs: r.startedAtMs,
      latencyMs: Math.round(r.latencyMs),
      statusCode: r.statusCode ?? null,
      errorClass: r.errorClass ?? null,
      errorMessage: r.errorMessage ?? null,
      responseBody: r.responseBody ?? null,
      trigger: job.trigger,
    }));
    const kept = await this.o.store.complete({ id: job.id, owner: this.owner, nowMs, firstAttemptAtMs, attempts, outcome });
    if (!kept) {
      this.emit('delivery:lease-lost', { id: job.id });
      return;
    }
    const base = { id: job.id, destinationId: destination.id };
    if (outcome.status === 'succeeded') this.emit('delivery:succeeded', { ...base, attempts: job.attemptCount + 1 });
    else if (outcome.status === 'pending') {
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
    this.clearScheduled();
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([this.settled(), new Promise<void>((r) => (timeout = setTimeout(r, graceMs)))]);
    if (timeout) clearTimeout(timeout);
    await this.o.store.releaseLeases(this.owner, this.o.clock.now());
  }
}
