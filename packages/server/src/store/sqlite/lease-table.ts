import type { Completion, HeldLease } from '../delivery-queue.js';

/** A job handed to a worker: who holds it, and until when no one else may take it. */
export interface Lease {
  owner: string;
  destinationId: string;
  /** The row's created_at: with its id, which job this is (SQLite reuses the ids of deleted rows). */
  createdAtMs: number;
  untilMs: number;
  /** When the lease is dropped even if nothing completed or released it. */
  sweepAtMs: number;
}

/**
 * A destination's place in the due index after its last claim: the (due time, id) of the
 * furthest job claimed, and how many claims read on from there since one read from the start.
 */
export interface ClaimCursor {
  due: number;
  id: number;
  after: number;
}

/** Whether a completion comes from the worker holding this lease, for the same job. */
export function holds(lease: Lease, completion: Completion): boolean {
  return lease.owner === completion.owner && (completion.createdAtMs === undefined || completion.createdAtMs === lease.createdAtMs);
}

/**
 * The leases of a SQLite store, in memory rather than in the file: one process owns a SQLite
 * store (see ownership-lock.ts), so no other worker needs to see them, and a claim writes
 * nothing. After a crash every held job is due again at once: there is no lease in the file
 * to wait out. Beside them, each destination's claim cursor, valid while it holds any job.
 */
export class LeaseTable {
  /** Jobs handed out by a claim and not yet completed or released, by delivery id. */
  private readonly byId = new Map<number, Lease>();
  /** The same leases by destination: what a claim of that destination must skip. */
  private readonly byDestination = new Map<string, Map<number, Lease>>();
  /**
   * Per destination, the due index position of the last job claimed, while it holds any: every
   * job it holds lies at or before it, so a claim may read on from there without skipping
   * them (see sqlite-claim.ts).
   */
  private readonly cursors = new Map<string, ClaimCursor>();
  /** When {@link sweep} next drops leases long expired. */
  private nextSweepAtMs = 0;

  get(id: number): Lease | undefined {
    return this.byId.get(id);
  }

  /** The leases held on one destination's jobs (a live map: claims read it as they go). */
  heldBy(destinationId: string): Map<number, Lease> {
    let held = this.byDestination.get(destinationId);
    if (!held) this.byDestination.set(destinationId, (held = new Map<number, Lease>()));
    return held;
  }

  /** How many jobs of a destination are held. */
  heldCount(destinationId: string): number {
    return this.byDestination.get(destinationId)?.size ?? 0;
  }

  hold(id: number, lease: Lease): void {
    this.unhold(id);
    this.byId.set(id, lease);
    this.heldBy(lease.destinationId).set(id, lease);
  }

  /** Lets a job go, if it is held. */
  unhold(id: number): void {
    const lease = this.byId.get(id);
    if (lease === undefined) return;
    this.byId.delete(id);
    this.byDestination.get(lease.destinationId)?.delete(id);
  }

  /** Lets every job of a destination go. */
  unholdDestination(destinationId: string): void {
    for (const id of this.byDestination.get(destinationId)?.keys() ?? []) this.unhold(id);
  }

  /**
   * Drops leases that ran out a whole lease period ago, at most once per lease period: their
   * jobs were handed back, finished by another path (a deleted destination, a deletion
   * request) or never started, and nothing else would ever drop them. A lease that has merely
   * run out stays, so that its worker's late outcome still counts as long as no one else has
   * taken the job.
   */
  sweep(nowMs: number, leaseMs: number): void {
    if (nowMs < this.nextSweepAtMs) return;
    this.nextSweepAtMs = nowMs + leaseMs;
    for (const [id, lease] of this.byId) if (lease.sweepAtMs <= nowMs) this.unhold(id);
  }

  /**
   * Hands an owner's jobs back: all of them, or only the leases named (by job and end). A held
   * job kept its due time, which has passed: it is due again at once. Returns how many.
   */
  release(owner: string, leases?: readonly HeldLease[]): number {
    let released = 0;
    if (leases === undefined) {
      for (const [id, lease] of this.byId)
        if (lease.owner === owner) {
          this.unhold(id);
          released++;
        }
      return released;
    }
    for (const { id, leasedUntilMs } of leases) {
      const lease = this.byId.get(id);
      // Its end names the lease: a later claim of the same job (after this one ran out) set another.
      if (lease?.owner !== owner || lease.untilMs !== leasedUntilMs) continue;
      this.unhold(id);
      // It lies before the claim cursor: the next claim reads from the start and finds it.
      this.cursors.delete(lease.destinationId);
      released++;
    }
    return released;
  }

  /**
   * Extends an owner's leases on these jobs to `untilMs` (never back: one renewed further
   * keeps its end); returns the ids it held. The sweep moves as far: a lease is swept a lease
   * period after it ran out, as at its claim.
   */
  renew(owner: string, ids: readonly number[], untilMs: number): number[] {
    const renewed: number[] = [];
    for (const id of ids) {
      const lease = this.byId.get(id);
      if (lease?.owner !== owner) continue;
      if (untilMs > lease.untilMs) {
        lease.sweepAtMs += untilMs - lease.untilMs;
        lease.untilMs = untilMs;
      }
      renewed.push(id);
    }
    return renewed;
  }

  cursor(destinationId: string): ClaimCursor | undefined {
    return this.cursors.get(destinationId);
  }

  setCursor(destinationId: string, cursor: ClaimCursor): void {
    this.cursors.set(destinationId, cursor);
  }

  dropCursor(destinationId: string): void {
    this.cursors.delete(destinationId);
  }
}
