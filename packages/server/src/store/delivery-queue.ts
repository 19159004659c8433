import type { AttemptOutcome, AttemptRecord, AttemptTrigger, ErrorClass } from '../model/attempt.js';

/** What a delivery job carries: a routed event, a deletion notice, or an audience identify. */
export type DeliveryKind = 'event' | 'delete' | 'audience';
/** `pending` (due or waiting), `succeeded`, or `dead` (dead-lettered; replayable). */
export type DeliveryStatus = 'pending' | 'succeeded' | 'dead';

/** A job to create: one per routed destination. */
export interface NewDelivery {
  destinationId: string;
  kind: DeliveryKind;
  /** The exact bytes to sign and send, serialised once. */
  body: string;
  sourceId?: string;
  messageId?: string;
  userId?: string;
}

/** What a worker asks a claim for. */
export interface ClaimRequest {
  destinationId: string;
  /** Who will hold the leases (a worker's id). */
  owner: string;
  nowMs: number;
  leaseMs: number;
  /** The most jobs to take. */
  limit: number;
}

/** A job handed to a worker under a lease. */
export interface ClaimedDelivery {
  id: number;
  destinationId: string;
  kind: DeliveryKind;
  body: string;
  messageId: string | null;
  userId: string | null;
  attemptCount: number;
  /** Start of the retry window; null before the first attempt. */
  firstAttemptAtMs: number | null;
  trigger: AttemptTrigger;
  createdAtMs: number;
  /** The source the delivery was made for (an event's, a deletion notice's); null for audience syncs. */
  sourceId: string | null;
}

/** One lease a claim handed out: the job, and the end of the lease as the claim set it. */
export interface HeldLease {
  id: number;
  leasedUntilMs: number;
}

/** What the worker records when an attempt of a job is over. */
export interface Completion {
  id: number;
  /** The lease owner that sent it; the outcome is kept only if it still holds the lease. */
  owner: string;
  /**
   * The job's `createdAtMs` as claimed. SQLite may give the id of a deleted row (a deletion
   * request) to a new one; with this, an outcome of the deleted job never lands on it.
   */
  createdAtMs?: number;
  /**
   * The job's kind as claimed. A delete notice that succeeds is deleted with its attempts
   * rather than kept: it names the user it was about.
   */
  kind?: DeliveryKind;
  nowMs: number;
  firstAttemptAtMs: number;
  attempts: AttemptRecord[];
  outcome: AttemptOutcome;
}

/** Which dead letters a bulk replay takes. */
export interface ReplayFilter {
  ids?: number[];
  destinationId?: string;
  /** Only those dead-lettered at or after this time. */
  sinceMs?: number;
  /** Only those dead-lettered before this time. */
  untilMs?: number;
  /** Only those whose last attempt failed with this error class on one of its URLs (read from `last_error`, see `errorClassPatterns`). */
  errorClass?: ErrorClass;
  /**
   * Only those whose destination is one of these (the ones that exist): a dead letter of a
   * deleted destination has nowhere to go and stays dead.
   */
  destinationIdsIn?: string[];
}

/**
 * What a replay of one delivery did: `replayed`; `pending` when it is still in line (waiting,
 * retrying or being sent), nothing changed; `not_found` when there is no such delivery or its
 * destination is gone.
 */
export type ReplayDeliveryOutcome = 'replayed' | 'pending' | 'not_found';

/**
 * The delivery queue: jobs waiting to be sent, the leases workers hold on them, the outcomes
 * they record, and dead letters going back into line.
 */
export interface DeliveryQueue {
  /**
   * `delivery.claimBatchSize` when the configuration leaves it unset: jobs per claim, and the
   * most a destination holds ready. A store whose claims take milliseconds needs more held
   * ready than one whose claims are in-process reads, which deeper holds only slow down.
   */
  readonly defaultClaimBatchSize: number;
  /** Earliest `next_attempt_at` among pending jobs of these destinations, or null when none. */
  nextDueAt(destinationIds: string[]): Promise<number | null>;
  /**
   * Leases up to `limit` due jobs of one destination: they become invisible to other claims
   * until `nowMs + leaseMs`, after which they are due again (a dead worker loses nothing).
   */
  claim(args: ClaimRequest): Promise<ClaimedDelivery[]>;
  /**
   * Records the attempts and the outcome, if `owner` still holds the lease. Returns false when
   * the lease was lost (another worker took the job after expiry); the attempts are still logged.
   */
  complete(args: Completion): Promise<boolean>;
  /**
   * Returns this owner's leased jobs to the queue, due again at once: all of them (graceful
   * stop), or only the leases named in `leases` (jobs held ready that will not be sent). A
   * lease is named by its job and its end as the claim set it (`nowMs + leaseMs`), so that a
   * later lease on the same job, by this owner too, is never released by mistake. Resolves
   * with how many it returned.
   */
  releaseLeases(owner: string, nowMs: number, leases?: readonly HeldLease[]): Promise<number>;
  /**
   * Extends this owner's leases on the jobs `ids` to `untilMs` (a worker still busy with them,
   * or holding them ready), so that only a dead worker's jobs wait out a lease; a lease that
   * already ends later keeps its end (a late renewal never shortens one). Resolves with
   * the ids it still held and renewed; a job missing was lost (taken by another worker after
   * its lease ran out, or finished by another path) and must not be sent or recorded as sent.
   */
  renewLeases(owner: string, ids: readonly number[], untilMs: number): Promise<number[]>;
  /**
   * Dead-letters every pending job of a destination that was deleted (reason
   * `destination_deleted`), and deletes its `delete` notices, whatever their state, with their
   * attempts: each names a user, and no other destination was to get it. Resolves with how many
   * pending jobs it took out of line (either way).
   */
  abandonPending(destinationId: string, nowMs: number): Promise<number>;
  /** Queues deliveries that are not tied to a stored event (deletion notices, audience identifies). */
  enqueue(deliveries: NewDelivery[], nowMs: number): Promise<void>;
  /**
   * Dead letters back to pending, due now, with a fresh retry window whose backoff starts
   * again (attemptCount counts the attempts of the current window); returns how many.
   */
  replay(filter: ReplayFilter, nowMs: number): Promise<number>;
  /**
   * One finished delivery, succeeded or dead, back to pending, due now, as {@link replay} does
   * for dead letters: the same row, body and messageId (receivers deduplicate with it), a
   * fresh retry window, its attempts so far kept in its log. `destinationIdsIn` names the
   * destinations that exist: a delivery of a deleted one has nowhere to go.
   */
  replayDelivery(args: { id: number; destinationIdsIn: readonly string[] }, nowMs: number): Promise<ReplayDeliveryOutcome>;
  /** How many dead letters {@link replay} would take with this filter now; changes nothing. */
  countReplayable(filter: ReplayFilter): Promise<number>;
}
