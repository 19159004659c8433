import type { Logger } from 'pino';
import type { DeliveryQueue } from '../store/delivery-queue.js';
import type { Clock, TimerHandle, Timers } from '../util/clock.js';

/**
 * A lease a worker holds on a job. Renewals move `leasedUntilMs`, in place: whoever keeps the
 * object (a job held ready) sees the lease's current end, which is also how a hand-back
 * names it.
 */
export interface TrackedLease {
  readonly id: number;
  leasedUntilMs: number;
}

/** What {@link LeaseRenewal} needs; the worker builds it. */
export interface LeaseRenewalOptions {
  store: Pick<DeliveryQueue, 'renewLeases'>;
  owner: string;
  clock: Clock;
  timers: Timers;
  leaseMs: number;
  intervalMs: number;
  logger: Logger;
  /** Leases a renewal found lost: another worker may have these jobs now. */
  onLost(ids: number[]): void;
  /**
   * A renewal failed, or did not finish within `intervalMs` (logged already); the leases are
   * tried again at the next interval, or at once after a round given up on.
   */
  onError(error: unknown): void;
}

/**
 * Keeps a live worker's leases from running out: every `intervalMs` on the worker's clock, one
 * store round trip extends every lease it holds (jobs being sent, jobs held ready) to a full
 * `leaseMs` from now. So a lease can be short, and a dead node's jobs are taken over soon,
 * while a job that waits or takes long on a live node is never claimed by another.
 */
export class LeaseRenewal {
  private readonly held = new Map<number, TrackedLease>();
  private timer: TimerHandle | undefined;
  private running = false;
  /** The round in progress, if any. */
  private current: Promise<void> | undefined;

  constructor(private readonly o: LeaseRenewalOptions) {}

  /** How many leases are renewed. */
  get size(): number {
    return this.held.size;
  }

  /** Renews this lease from now on, until {@link forget}. */
  track(lease: TrackedLease): void {
    this.held.set(lease.id, lease);
  }

  /**
   * Stops renewing a job's lease: it was handed back, or its outcome is being recorded (the
   * record itself checks the lease, and a renewal racing it must not call it lost).
   */
  forget(id: number): void {
    this.held.delete(id);
  }

  /** Renews every `intervalMs` on the clock's timers until {@link stop}. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule();
  }

  /**
   * Stops renewing and forgets every lease (the worker hands them all back); a round in
   * progress finishes first, or is given up on after `intervalMs`.
   */
  async stop(): Promise<void> {
    this.running = false;
    this.o.timers.clearTimeout(this.timer);
    this.timer = undefined;
    await this.current;
    this.held.clear();
  }

  private schedule(delayMs = this.o.intervalMs): void {
    if (!this.running) return;
    this.timer = this.o.timers.setTimeout(() => {
      this.timer = undefined;
      this.current = this.boundedRound().then((gaveUp) => {
        this.current = undefined;
        // A round given up on has taken a whole interval already: the next one goes at once,
        // so that the leases are still renewed before they run out.
        this.schedule(gaveUp ? 0 : this.o.intervalMs);
      });
    }, delayMs);
  }

  /**
   * One round, waited for at most `intervalMs`: a round stuck on the store (a connection that
   * never answers) must not stop the rounds after it, nor hold up a stop. It is given up on,
   * not cancelled: if it ends later, what it found still counts (see {@link renew}). Resolves
   * with whether it was given up on.
   */
  private boundedRound(): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const timeout = this.o.timers.setTimeout(() => {
        this.o.logger.warn(
          { leases: this.held.size, waitedMs: this.o.intervalMs },
          'a delivery lease renewal did not finish within its interval; the next one starts now',
        );
        this.o.onError(new Error(`a delivery lease renewal did not finish within ${this.o.intervalMs} ms`));
        resolve(true);
      }, this.o.intervalMs);
      void this.renew().then(() => {
        this.o.timers.clearTimeout(timeout);
        resolve(false);
      });
    });
  }

  /**
   * One round: extends every lease held to `leaseMs` from now. Leases no longer held by the
   * owner go to `onLost`; those forgotten meanwhile are left alone. Never rejects.
   */
  async renew(): Promise<void> {
    const leases = [...this.held.values()];
    if (leases.length === 0) return;
    const untilMs = this.o.clock.now() + this.o.leaseMs;
    let renewed: Set<number>;
    try {
      renewed = new Set(
        await this.o.store.renewLeases(
          this.o.owner,
          leases.map((l) => l.id),
          untilMs,
        ),
      );
    } catch (error) {
      this.o.logger.warn({ err: error, leases: leases.length }, 'delivery leases could not be renewed; trying again at the next interval');
      this.o.onError(error);
      return;
    }
    const lost: number[] = [];
    for (const lease of leases) {
      // Forgotten meanwhile (recorded, handed back): neither renewed here nor lost.
      if (this.held.get(lease.id) !== lease) continue;
      if (renewed.has(lease.id)) {
        // A round given up on that ends after a later one must not move the lease's end back.
        lease.leasedUntilMs = Math.max(lease.leasedUntilMs, untilMs);
        continue;
      }
      this.held.delete(lease.id);
      lost.push(lease.id);
    }
    if (lost.length > 0) {
      this.o.logger.warn({ jobs: lost.length }, 'delivery leases were lost (taken by another worker after they ran out)');
      this.o.onLost(lost);
    }
  }
}
