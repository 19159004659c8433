import type { Logger } from 'pino';
import type { DestinationConfig } from '../config/model.js';
import type { Catalog } from '../routing/catalog.js';
import type { ClaimedDelivery, HeldLease, Store } from '../store/store.js';
import type { Clock, TimerHandle, Timers } from '../util/clock.js';
import { RepeatedErrorLog } from '../util/repeated-error-log.js';
import { heldUntil, mayStart, type SendGuard } from './guards.js';
import type { LeaseRenewal, TrackedLease } from './lease-renewal.js';
import type { Pacing } from './pacing.js';
import { readyLimits, type ResolvedDeliverySettings } from './ready-limits.js';
import type { Slots } from './slots.js';

/** While claims keep failing the same way (a full disk, a database down), one log line per this long. */
const claimErrorLogIntervalMs = 60_000;

/** What the scheduler needs; the worker builds it. */
export interface SchedulerOptions {
  store: Store;
  catalog: Catalog;
  settings: ResolvedDeliverySettings;
  clock: Clock;
  /** Runs the poll loop's waits; on a manual clock in tests. */
  timers: Timers;
  logger: Logger;
  /** Lease owner name of the worker. */
  owner: string;
  slots: Slots;
  pacing: Pacing;
  /** Consulted before each send, in order. */
  guards: readonly SendGuard[];
  /** Renews the leases of the jobs claimed, from their claim until they are handed back (or sent and recorded). */
  leases: LeaseRenewal;
  /** Sends a job whose slot is free: takes the slot and runs the attempt. */
  send(job: ClaimedDelivery, destination: DestinationConfig): void;
  /** Keeps a promise of work in flight (a send, a hand-back) for the worker's `settled()`. */
  track(work: Promise<void>): void;
  /** A claim or a hand-back failed (logged already). */
  onError(error: unknown): void;
}

/**
 * The claim side of delivery: the polling loop, claims under a lease with fairness between
 * destinations, the jobs held ready for a slot, the per-endpoint guards consulted before each
 * send, and hand-backs of jobs this worker will not send.
 */
export class Scheduler {
  /** Leased jobs waiting for a free slot, per destination id, in claim order; their leases' ends move as they are renewed. */
  private readonly ready = new Map<string, (TrackedLease & { job: ClaimedDelivery })[]>();
  /** Jobs in {@link ready} over all destinations, kept as they come and go (read per destination per round). */
  private readyCount = 0;
  /** Destinations whose sends a guard holds, until when. */
  private readonly held = new Map<string, number>();
  private stopped = true;
  private timer: TimerHandle | undefined;
  private immediate: NodeJS.Immediate | undefined;
  /** Set by halt() only (a worker driven by hand through tick() is never "started"). */
  private halted = false;
  /** The loop round in progress, if any. */
  private current: Promise<void> | undefined;
  private rotation = 0;
  private readyRotation = 0;
  private wakeRequested = false;
  /** Set by a claim round that left a destination alone because too few of its slots were free. */
  private waitingForSlots = false;
  /** The catalog's list of enabled destinations as {@link forgetInactive} last saw it. */
  private checkedActive: readonly DestinationConfig[] | undefined;
  private readonly claimErrors: RepeatedErrorLog;

  constructor(private readonly o: SchedulerOptions) {
    this.claimErrors = new RepeatedErrorLog({
      logger: o.logger,
      clock: o.clock,
      intervalMs: claimErrorLogIntervalMs,
      message: 'delivery claim failed; retrying after the poll interval',
      recoveredMessage: 'delivery claims work again',
    });
  }

  /** Whether the loop runs: started and not stopped. */
  get running(): boolean {
    return !this.stopped;
  }

  /** Starts the polling loop. */
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

  /** After a slot freed: ready jobs start, and a claim round follows. */
  slotFreed(): void {
    if (this.stopped) return;
    this.startAllReady();
    this.wake();
  }

  /** After an outcome was recorded: a round that found no room (records count against it) can go on now. */
  recorded(): void {
    if (!this.stopped && this.waitingForSlots) this.wake();
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
    this.timer = this.o.timers.setTimeout(() => this.runLoop(), delayMs);
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
    this.o.timers.clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  private async loop(): Promise<void> {
    const { settings, slots, clock } = this.o;
    let claimed = 0;
    this.waitingForSlots = false;
    try {
      claimed = await this.tick();
      this.claimErrors.resolved();
    } catch (error) {
      this.claimErrors.report(error);
      this.o.onError(error);
      // Not sooner, even with jobs due: a store that cannot claim now will not a moment later.
      if (!this.stopped) this.schedule(settings.pollIntervalMs);
      return;
    }
    if (this.stopped) return;
    // Full slots: the next round starts when a job finishes (see slotFreed()).
    if (claimed > 0 || this.wakeRequested) {
      this.wakeRequested = false;
      if (slots.total < settings.concurrency) this.schedule(0);
      return;
    }
    // Due work waits for slots that are busy (or for records of finished jobs): the job that
    // frees them wakes the loop, so there is no need to ask the store when the next is due.
    if (this.waitingForSlots && slots.total + slots.recording > 0) {
      this.schedule(settings.pollIntervalMs);
      return;
    }
    // A held destination's jobs are due, but wait for the hold's end, not for the next poll.
    let holdEndsAt = Infinity;
    const open: string[] = [];
    for (const d of this.o.catalog.enabledDestinations()) {
      const until = this.held.get(d.id);
      if (until === undefined) open.push(d.id);
      else holdEndsAt = Math.min(holdEndsAt, until);
    }
    const next = open.length === 0 ? null : await this.o.store.nextDueAt(open).catch(() => null);
    if (this.stopped) return;
    if (this.wakeRequested) {
      this.wakeRequested = false;
      this.schedule(0);
      return;
    }
    const nowMs = clock.now();
    const untilDue = Math.min(next === null ? Infinity : Math.max(0, next - nowMs), Math.max(0, holdEndsAt - nowMs));
    this.schedule(Math.min(settings.pollIntervalMs, untilDue));
  }

  /**
   * One claim round: for every enabled destination with room, lease due jobs and start
   * sending them as far as the concurrency limits allow (the rest wait, leased, for a slot:
   * see {@link readyLimits}). Resolves with the number claimed, before the sends finish.
   */
  async tick(): Promise<number> {
    const { settings, clock, slots, pacing } = this.o;
    let claimed = 0;
    // Over all destinations once per round; per destination below.
    const anyExchangeMs = pacing.slowestExchange(clock.now());
    // Start each round at the next destination, so that when slots are scarce the ones late
    // in the list are not always offered what is left.
    const active = this.o.catalog.enabledDestinations();
    this.forgetInactive(active);
    const offset = active.length > 0 ? this.rotation++ % active.length : 0;
    for (let i = 0; i < active.length; i++) {
      const destination = active[(offset + i) % active.length]!;
      const nowMs = clock.now();
      if (this.held.size > 0 && this.isHeld(destination.id, nowMs)) continue;
      this.startReady(destination);
      const busy = slots.busy(destination.id);
      const ready = this.ready.get(destination.id)?.length ?? 0;
      const { perDestination: readyLimit, total: readyTotalLimit } = readyLimits(settings, {
        destination: pacing.slowestExchange(nowMs, destination.id),
        any: anyExchangeMs,
      });
      // Refill in batches: while a destination holds most of what it may, wait until half of
      // it is free, so that one claim query serves many jobs rather than one each.
      const refillAt = Math.max(1, Math.floor(Math.min(settings.perDestinationConcurrency + readyLimit, settings.claimBatchSize) / 2));
      const room = Math.min(
        settings.perDestinationConcurrency + readyLimit - busy - ready,
        // Jobs waiting for their outcome to be recorded count too: if the store falls behind,
        // claiming stops rather than piling up sent jobs whose records wait in memory.
        settings.concurrency + readyTotalLimit - slots.total - this.readyCount - slots.recording,
        settings.claimBatchSize,
      );
      if (room <= 0 || (room < refillAt && busy + ready > 0)) {
        this.waitingForSlots = true;
        continue;
      }
      const jobs = await this.o.store.claim({ destinationId: destination.id, owner: this.o.owner, nowMs, leaseMs: settings.leaseMs, limit: room });
      claimed += jobs.length;
      // Stopped while the claim was under way: start nothing; the worker hands these back.
      if (this.halted) return claimed;
      if (jobs.length === 0) continue;
      let queue = this.ready.get(destination.id);
      if (!queue) this.ready.set(destination.id, (queue = []));
      for (const job of jobs) {
        const entry = { id: job.id, job, leasedUntilMs: nowMs + settings.leaseMs };
        queue.push(entry);
        this.o.leases.track(entry);
      }
      this.readyCount += jobs.length;
      this.startReady(destination);
    }
    return claimed;
  }

  /** Whether a guard holds a destination's sends now; a hold that ended is forgotten. */
  private isHeld(destinationId: string, nowMs: number): boolean {
    const until = this.held.get(destinationId);
    if (until === undefined) return false;
    if (until > nowMs) return true;
    this.held.delete(destinationId);
    return false;
  }

  /** Starts ready jobs of a destination while its slots and the global ones allow, and no guard holds it. */
  private startReady(destination: DestinationConfig): void {
    const queue = this.ready.get(destination.id);
    if (!queue || queue.length === 0) return;
    const { settings, clock, slots, guards } = this.o;
    let late: HeldLease[] | undefined;
    while (queue.length > 0 && slots.free(destination.id)) {
      const nowMs = clock.now();
      if (guards.length > 0) {
        const until = heldUntil(guards, destination, nowMs);
        if (until !== undefined) {
          this.hold(destination.id, until);
          return;
        }
        // The ready jobs wait for a send of this destination to end (slotFreed() comes back here).
        if (!mayStart(guards, destination, nowMs)) return;
      }
      const { job, leasedUntilMs } = queue.shift()!;
      this.readyCount--;
      // A job that waited so long that its lease could run out during its exchange (the head
      // within timeoutMs, then at most 1 s for the body) is not started, so that no two workers
      // ever send it at the same time; it goes back to the queue, due at once, rather than
      // waiting out its lease. (A job claimed for a free slot starts at once and never meets
      // this: the lease rule asks for 2 x timeoutMs + 1 s.)
      if (nowMs + settings.timeoutMs + 1000 > leasedUntilMs) {
        (late ??= []).push({ id: job.id, leasedUntilMs });
        continue;
      }
      this.o.send(job, destination);
    }
    if (late) this.handBack(late, destination.id, 'waited too long for a slot');
  }

  /** A guard holds a destination until `untilMs`: its ready jobs go back to the queue, unsent. */
  private hold(destinationId: string, untilMs: number): void {
    this.held.set(destinationId, untilMs);
    const queue = this.ready.get(destinationId) ?? [];
    this.ready.delete(destinationId);
    this.readyCount -= queue.length;
    this.handBack(
      queue.map((r) => ({ id: r.job.id, leasedUntilMs: r.leasedUntilMs })),
      destinationId,
      `held by a send guard until ${new Date(untilMs).toISOString()}`,
    );
  }

  /**
   * Returns to the queue, due again at once, jobs this worker holds but will not send. If that
   * fails they still come back when their leases run out: nothing is lost, so log and go on.
   */
  private handBack(leases: HeldLease[], destinationId: string, why: string): void {
    for (const lease of leases) this.o.leases.forget(lease.id);
    this.o.logger.debug({ destinationId, jobs: leases.length }, `jobs held ready ${why}; handed back`);
    this.o.track(
      this.o.store.releaseLeases(this.o.owner, this.o.clock.now(), leases).then(
        () => this.wake(),
        (error: unknown) => {
          this.o.logger.warn(
            { err: error, destinationId, jobs: leases.length },
            'jobs held ready could not be handed back; they come back when their leases run out',
          );
          this.o.onError(error);
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
   * destination's pace and holds is forgotten. The catalog's list is the same array until it changes.
   */
  private forgetInactive(active: readonly DestinationConfig[]): void {
    if (active === this.checkedActive) return;
    this.checkedActive = active;
    const enabled = new Set(active.map((d) => d.id));
    for (const [id, queue] of [...this.ready]) {
      if (enabled.has(id)) continue;
      this.readyCount -= queue.length;
      this.ready.delete(id);
      if (queue.length > 0)
        this.handBack(
          queue.map((r) => ({ id: r.job.id, leasedUntilMs: r.leasedUntilMs })),
          id,
          'of a destination no longer enabled',
        );
    }
    for (const id of [...this.held.keys()]) if (!enabled.has(id)) this.held.delete(id);
    this.o.pacing.forget(enabled);
    this.o.slots.forget(enabled);
  }

  /**
   * Drops jobs held ready whose leases were lost (another worker may be sending them now):
   * they are never started here. Returns the ids dropped.
   */
  dropReady(ids: readonly number[]): number[] {
    const lost = new Set(ids);
    const dropped: number[] = [];
    for (const [destinationId, queue] of this.ready) {
      const kept = queue.filter((r) => !lost.has(r.id));
      if (kept.length === queue.length) continue;
      for (const r of queue) if (lost.has(r.id)) dropped.push(r.id);
      this.readyCount -= queue.length - kept.length;
      this.ready.set(destinationId, kept);
    }
    return dropped;
  }

  /**
   * Stops claiming and starting: waits for a round in progress to finish its claim (so that a
   * release of every lease afterwards sees those jobs too), then drops the ready jobs, which
   * stay leased for that release.
   */
  async halt(): Promise<void> {
    this.stopped = true;
    this.halted = true;
    this.clearScheduled();
    await this.current;
    this.ready.clear();
    this.readyCount = 0;
  }
}
