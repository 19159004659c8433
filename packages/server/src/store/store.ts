import type { DestinationConfig, SourceConfig } from '../config/model.js';
import type { ErrorClass } from '../destinations/webhooks/sender.js';

/**
 * The one asynchronous interface every store implements: SQLite (embedded, one process) and
 * PostgreSQL (several nodes). Ingestion and delivery speak only to this.
 */

/** What a delivery job carries: a routed event, a deletion notice, or an audience identify. */
export type DeliveryKind = 'event' | 'delete' | 'audience';
/** `pending` (due or waiting), `succeeded`, or `dead` (dead-lettered; replayable). */
export type DeliveryStatus = 'pending' | 'succeeded' | 'dead';
/** An attempt is `scheduled` by the retry policy or `manual` after a replay. */
export type AttemptTrigger = 'scheduled' | 'manual';

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

/** One accepted message and the jobs routed from it, written in one transaction. */
export interface NewEvent {
  sourceId: string;
  messageId: string;
  type: string;
  userId?: string;
  anonymousId?: string;
  /** Track event name; kept in a column for audience rules. */
  event?: string;
  receivedAtMs: number;
  /** The normalised message, serialised once. */
  json: string;
  deliveries: Omit<NewDelivery, 'sourceId' | 'messageId' | 'userId'>[];
}

/** A message refused inside an otherwise accepted batch, kept for operators. */
export interface NewRejection {
  sourceId: string;
  index: number;
  code: string;
  message: string;
}

/** The write of one ingestion request. */
export interface IngestWrite {
  /** When the request was received (rejections are stamped with it). */
  receivedAtMs: number;
  events: NewEvent[];
  rejections: NewRejection[];
}

/** What the write did: duplicates are messages whose (source, messageId) was already stored. */
export interface IngestOutcome {
  inserted: number;
  duplicates: number;
  deliveries: number;
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

/** One POST to one URL, as logged. */
export interface AttemptRecord {
  url: string;
  startedAtMs: number;
  latencyMs: number;
  statusCode: number | null;
  errorClass: ErrorClass | null;
  errorMessage: string | null;
  responseBody: string | null;
  trigger: AttemptTrigger;
}

/** How one delivery attempt (to every URL of the destination) ended. */
export type AttemptOutcome =
  | { status: 'succeeded' }
  | { status: 'pending'; nextAttemptAtMs: number; lastError: string }
  | { status: 'dead'; reason: DeadReason; lastError: string };

/** Why a delivery was dead-lettered. */
export type DeadReason =
  | 'retry_window_exhausted'
  | 'non_retryable_response'
  | 'destination_deleted';

/** A delivery as the admin API shows it. */
export interface DeliveryView {
  id: number;
  destinationId: string;
  sourceId: string | null;
  kind: DeliveryKind;
  status: DeliveryStatus;
  messageId: string | null;
  userId: string | null;
  attemptCount: number;
  createdAt: string;
  firstAttemptAt: string | null;
  nextAttemptAt: string | null;
  completedAt: string | null;
  deadReason: DeadReason | null;
  lastError: string | null;
}

/** One attempt as the admin API shows it. */
export interface AttemptView {
  url: string;
  startedAt: string;
  latencyMs: number;
  statusCode: number | null;
  errorClass: ErrorClass | null;
  errorMessage: string | null;
  responseBody: string | null;
  trigger: AttemptTrigger;
}

/** Filter of delivery listings. `afterId` pages forward through ids in ascending order. */
export interface DeliveryFilter {
  status?: DeliveryStatus;
  destinationId?: string;
  sourceId?: string;
  messageId?: string;
  afterId?: number;
  limit: number;
}

/** Which dead letters a bulk replay takes. */
export interface ReplayFilter {
  ids?: number[];
  destinationId?: string;
  /** Only those dead-lettered at or after this time. */
  sinceMs?: number;
  /**
   * Only those whose destination is one of these (the ones that exist): a dead letter of a
   * deleted destination has nowhere to go and stays dead.
   */
  destinationIdsIn?: string[];
}

/** A deletion request and its progress. */
export interface Regulation {
  id: string;
  /** The users named, while pending; empty once done, when Ferry keeps no trace of them. */
  userIds: string[];
  /** How many users were named. */
  userCount: number;
  /** null: every source. */
  sourceIds: string[] | null;
  status: 'pending' | 'done';
  createdAt: string;
  finishedAt: string | null;
  eventsDeleted: number;
  deliveriesDeleted: number;
  notificationsQueued: number;
}

/** Per user named in a deletion request, the sources in scope that held events it deleted. */
export type AffectedSources = Readonly<Record<string, readonly string[]>>;

/** One notice to queue when a regulation is carried out. */
export interface DeleteNotice {
  destinationId: string;
  sourceId: string;
  userId: string;
  body: string;
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

/** Counts for health and metrics. */
export interface StoreStats {
  events: number;
  deliveries: Record<DeliveryStatus, number>;
  rejections: number;
}

/** The store. Every method may reject when the underlying database fails; callers map that to 503. */
export interface Store {
  /** Which implementation this is, for logs. */
  readonly kind: 'sqlite' | 'postgres';
  /**
   * `delivery.claimBatchSize` when the configuration leaves it unset: jobs per claim, and the
   * most a destination holds ready. A store whose claims take milliseconds needs more held
   * ready than one whose claims are in-process reads, which deeper holds only slow down.
   */
  readonly defaultClaimBatchSize: number;

  // ingestion
  /** Stores events and their jobs atomically; resolves only once durably committed. */
  ingest(write: IngestWrite): Promise<IngestOutcome>;

  // delivery
  /** Earliest `next_attempt_at` among pending jobs of these destinations, or null when none. */
  nextDueAt(destinationIds: string[]): Promise<number | null>;
  /**
   * Leases up to `limit` due jobs of one destination: they become invisible to other claims
   * until `nowMs + leaseMs`, after which they are due again (a dead worker loses nothing).
   */
  claim(args: { destinationId: string; owner: string; nowMs: number; leaseMs: number; limit: number }): Promise<ClaimedDelivery[]>;
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
  /** Dead-letters every pending job of a destination that was deleted (reason `destination_deleted`). */
  abandonPending(destinationId: string, nowMs: number): Promise<number>;
  /** Queues deliveries that are not tied to a stored event (deletion notices, audience identifies). */
  enqueue(deliveries: NewDelivery[], nowMs: number): Promise<void>;

  // admin
  listDeliveries(filter: DeliveryFilter): Promise<DeliveryView[]>;
  getDelivery(id: number): Promise<{ delivery: DeliveryView; body: string; attempts: AttemptView[] } | null>;
  /**
   * Dead letters back to pending, due now, with a fresh retry window whose backoff starts
   * again (attemptCount counts the attempts of the current window); returns how many.
   */
  replay(filter: ReplayFilter, nowMs: number): Promise<number>;
  listRejections(args: { sourceId?: string; limit: number }): Promise<{ sourceId: string; index: number; code: string; message: string; receivedAt: string }[]>;
  rejectionCounts(): Promise<{ sourceId: string; code: string; count: number }[]>;
  stats(): Promise<StoreStats>;

  // regulations
  createRegulation(args: { id: string; userIds: string[]; sourceIds: string[] | null; nowMs: number }): Promise<Regulation>;
  getRegulation(id: string): Promise<Regulation | null>;
  pendingRegulations(): Promise<Regulation[]>;
  /**
   * Carries a pending regulation out (a done one is left as it is). First it fixes what to
   * delete (see `RegulationPlan` in regulations/regulation-plan.ts) and stores that with the request; then it deletes, in
   * batches of `batchSize` events (each batch a transaction of its own, so that ingestion and
   * delivery go on meanwhile), the events of the users and of the identities linked to them
   * in the sources named, with their deliveries and attempts; last, in one transaction, it
   * deletes the audience deliveries and memberships of the user ids left with no event,
   * queues the notices `noticesFor` returns (given the sources each user's events were in;
   * it must be pure), marks the request done and forgets the user ids. Resumable at any point.
   */
  executeRegulation(args: { id: string; nowMs: number; noticesFor: (affected: AffectedSources) => DeleteNotice[]; batchSize?: number }): Promise<Regulation>;
  /**
   * Makes the bytes of deleted rows unreadable as far as the database allows, after a purge:
   * SQLite (which zeroes deleted content as it deletes it) checkpoints and truncates its WAL,
   * which held copies of the pages as they were; PostgreSQL vacuums the tables purged, so the
   * dead row versions' space becomes free for reuse. Rejects when that could not be done.
   */
  reclaimDeleted(): Promise<void>;

  // catalog (sources and destinations edited at run time)
  loadCatalog(): Promise<{ sources: SourceConfig[]; destinations: DestinationConfig[] }>;
  saveSource(source: SourceConfig): Promise<void>;
  deleteSource(id: string): Promise<void>;
  saveDestination(destination: DestinationConfig): Promise<void>;
  deleteDestination(id: string): Promise<void>;

  // key-value settings (e.g. the generated admin token's hash)
  getSetting(key: string): Promise<string | null>;
  setSetting(key: string, value: string): Promise<void>;

  /**
   * Resolves when the store can serve; rejects with the reason otherwise (the readiness check,
   * `GET /health/ready`). SQLite: the last write succeeded, or a test write does now.
   * PostgreSQL: the server answers a query. Cheap enough for a probe every few seconds.
   */
  checkReady(): Promise<void>;

  close(): Promise<void>;
}
