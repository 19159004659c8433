import type Database from 'better-sqlite3';
import { SqliteActivityCounts } from './sqlite-activity-counts.js';
import type { DestinationConfig, SourceConfig } from '../../config/model.js';
import type { AudienceStore } from '../audience-store.js';
import type { AuditLog } from '../audit-log.js';
import type { DestinationHealthStore } from '../destination-health.js';
import type { RateLimitBuckets } from '../rate-limit-buckets.js';
import type { StoredCatalog } from '../catalog-store.js';
import type { ClaimedDelivery, ClaimRequest, Completion, HeldLease, NewDelivery, ReplayDeliveryOutcome, ReplayFilter } from '../delivery-queue.js';
import type { DeliveryDetail, DeliveryFilter, DeliveryView } from '../delivery-reads.js';
import type { DestinationBacklog } from '../backlog.js';
import { SqliteBacklog } from './sqlite-backlog.js';
import type { IngestOutcome, IngestWrite, RejectionCount, RejectionView } from '../event-log.js';
import type { ExecuteRegulationArgs, Regulation, RegulationCursor } from '../regulations-store.js';
import type {
  ArchiveBatchArgs,
  ArchiveBatchResult,
  ArchiveCountArgs,
  ArchiveFilter,
  ReplayJobBatchArgs,
  ReplayJobCursor,
  ReplayJobRecord,
} from '../replay-jobs-store.js';
import type { Store, StoreStats } from '../store.js';
import type { TokenStore } from '../token-store.js';
import type { ActivityCounts } from '../activity-counts.js';
import type { RetentionStore } from '../retention-store.js';
import { CoalescedTask } from '../coalesced-task.js';
import { systemClock, timersOf, type Clock } from '../../util/clock.js';
import { GroupCommit } from './group-commit.js';
import { LeaseTable } from './lease-table.js';
import { cannotOpen, takeOwnership } from './ownership-lock.js';
import { SqliteAudienceStore } from './sqlite-audience-store.js';
import { SqliteAuditLog } from './sqlite-audit-log.js';
import { SqliteDestinationHealth } from './sqlite-destination-health.js';
import { SqliteCatalog } from './sqlite-catalog.js';
import { SqliteClaims } from './sqlite-claim.js';
import { SqliteCompletions } from './sqlite-completion.js';
import { openConnection, truncateWal } from './sqlite-connection.js';
import { abandonPending, countReplayable, replay } from './sqlite-dead-letters.js';
import { replayDelivery } from './sqlite-replay-delivery.js';
import { SqliteDeliveryReads } from './sqlite-delivery-reads.js';
import { SqliteDeliveryRows } from './sqlite-delivery-rows.js';
import { SqliteEventLog } from './sqlite-event-log.js';
import { isSqliteUnavailable } from './sqlite-failure.js';
import { SqliteRegulations } from './sqlite-regulations.js';
import { SqliteReplayJobs } from './sqlite-replay-jobs.js';
import { SqliteRetention } from './sqlite-retention.js';
import { SqliteTokenStore } from './sqlite-token-store.js';
import { WriteProbe } from './write-probe.js';

/** Options of the SQLite store. */
export interface SqliteStoreOptions {
  /** Path of the database file; `:memory:` is accepted for throwaway use. */
  path: string;
  /** Time and timers of the WAL truncations' interval and of the readiness probe; default the system clock and Node's timers. */
  clock?: Clock;
  /**
   * Least time, in ms, between two truncations of the WAL after deletions (see
   * `reclaimDeleted`); default {@link defaultWalTruncateIntervalMs}.
   */
  walTruncateIntervalMs?: number;
}

/**
 * A truncation copies up to the whole WAL (some 40 MB) into the file and syncs it on the
 * event loop's thread: one every few seconds at most keeps a burst of delivered notices from
 * stalling ingestion again and again, and bytes deleted stay in the WAL that long at most.
 */
export const defaultWalTruncateIntervalMs = 5000;

/**
 * The embedded store: one SQLite file in WAL mode with full sync, so a resolved `ingest`
 * has reached the disk. Concurrent ingestion requests are committed together (group commit,
 * group-commit.ts). One process owns the file while the store is open (ownership-lock.ts), and
 * holds its delivery leases in memory (lease-table.ts). This class ties the parts together:
 * each role method hands its work to the module of its concern.
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  readonly isUnavailable = isSqliteUnavailable;
  /**
   * A claim is a read in this process, well under a millisecond: holding more ready gains
   * nothing, and claims of 400 doubled the median delay from ingestion to delivery at half the
   * sustainable rate (4 ms to 7-9 ms).
   */
  readonly defaultClaimBatchSize = 100;
  readonly audiences: AudienceStore;
  readonly tokens: TokenStore;
  readonly audit: AuditLog;
  readonly health: DestinationHealthStore;
  readonly rateLimitBuckets: RateLimitBuckets | undefined;
  readonly retention: RetentionStore;
  readonly activity: ActivityCounts;
  private readonly db: Database.Database;
  /** Held open for the store's life: see {@link takeOwnership}. */
  private readonly ownership: Database.Database | undefined;
  private readonly probe: WriteProbe;
  private readonly clock: Clock;
  private readonly commits: GroupCommit;
  private readonly leases = new LeaseTable();
  private readonly deliveries: SqliteDeliveryRows;
  private readonly eventLog: SqliteEventLog;
  private readonly claims: SqliteClaims;
  private readonly completions: SqliteCompletions;
  private readonly reads: SqliteDeliveryReads;
  private readonly backlogReads: SqliteBacklog;
  private readonly regulations: SqliteRegulations;
  private readonly replayJobs: SqliteReplayJobs;
  private readonly catalog: SqliteCatalog;
  private readonly walTruncation: CoalescedTask;

  constructor(options: SqliteStoreOptions) {
    if (options.path !== ':memory:') this.ownership = takeOwnership(options.path);
    let opened: Database.Database | undefined;
    try {
      this.db = opened = openConnection(options.path);
      const db = this.db;
      const clock = (this.clock = options.clock ?? systemClock);
      this.walTruncation = new CoalescedTask({
        run: () => truncateWal(db),
        clock,
        timers: timersOf(clock),
        intervalMs: options.walTruncateIntervalMs ?? defaultWalTruncateIntervalMs,
      });
      this.probe = new WriteProbe(this.db);
      this.commits = new GroupCommit(this.db, this.probe);
      this.deliveries = new SqliteDeliveryRows(this.db, this.leases);
      this.eventLog = new SqliteEventLog(this.db, this.commits, this.deliveries);
      this.claims = new SqliteClaims(this.db, this.leases, this.probe);
      this.completions = new SqliteCompletions(this.db, this.commits, this.leases, this.probe, this.deliveries, this.walTruncation);
      this.reads = new SqliteDeliveryReads(this.db, this.leases);
      this.backlogReads = new SqliteBacklog(this.db, this.deliveries.counts);
      this.regulations = new SqliteRegulations(this.db, this.deliveries, this.walTruncation);
      this.catalog = new SqliteCatalog(this.db);
      this.replayJobs = new SqliteReplayJobs(this.db, this.leases, this.deliveries);
      this.audiences = new SqliteAudienceStore(this.db, this.deliveries);
      this.tokens = new SqliteTokenStore(this.db);
      this.audit = new SqliteAuditLog(this.db);
      this.health = new SqliteDestinationHealth(this.db);
      this.rateLimitBuckets = undefined;
      this.retention = new SqliteRetention(this.db, this.walTruncation, this.deliveries.counts, this.deliveries.totals);
      this.activity = new SqliteActivityCounts(this.db);
    } catch (error) {
      // Nothing half-open stays behind, least of all the lock: the next try must not find it taken.
      if (opened?.open) opened.close();
      this.ownership?.close();
      throw cannotOpen(options.path, error);
    }
  }

  // event log (sqlite-event-log.ts)
  ingest(write: IngestWrite): Promise<IngestOutcome> {
    return this.eventLog.ingest(write);
  }
  listRejections(args: { sourceId?: string; limit: number }): Promise<RejectionView[]> {
    return this.eventLog.listRejections(args);
  }
  rejectionCounts(): Promise<RejectionCount[]> {
    return this.eventLog.rejectionCounts();
  }

  // delivery queue (sqlite-claim.ts, sqlite-completion.ts, lease-table.ts, sqlite-dead-letters.ts)
  async nextDueAt(destinationIds: string[]): Promise<number | null> {
    return this.claims.nextDueAt(destinationIds);
  }
  claim(args: ClaimRequest): Promise<ClaimedDelivery[]> {
    try {
      return Promise.resolve(this.claims.claim(args));
    } catch (error) {
      return Promise.reject(error);
    }
  }
  complete(completion: Completion): Promise<boolean> {
    return this.completions.complete(completion);
  }
  async releaseLeases(owner: string, _nowMs: number, leases?: readonly HeldLease[]): Promise<number> {
    return this.leases.release(owner, leases);
  }
  async renewLeases(owner: string, ids: readonly number[], untilMs: number): Promise<number[]> {
    return this.leases.renew(owner, ids, untilMs);
  }
  async abandonPending(destinationId: string, nowMs: number): Promise<number> {
    return this.db.transaction(() => abandonPending(this.db, this.leases, this.deliveries, destinationId, nowMs))();
  }
  async enqueue(deliveries: NewDelivery[], nowMs: number): Promise<void> {
    this.db.transaction(() => {
      for (const d of deliveries) this.deliveries.insertLoose(d, nowMs);
    })();
  }
  async replay(filter: ReplayFilter, nowMs: number): Promise<number> {
    return this.db.transaction(() => replay(this.db, this.leases, this.deliveries.counts, filter, nowMs).length)();
  }
  async replayDelivery(args: { id: number; destinationIdsIn: readonly string[] }, nowMs: number): Promise<ReplayDeliveryOutcome> {
    return this.db.transaction(() => replayDelivery(this.db, this.leases, this.deliveries.counts, args, nowMs)).immediate();
  }
  async countReplayable(filter: ReplayFilter): Promise<number> {
    return countReplayable(this.db, filter);
  }

  // replay jobs (sqlite-replay-jobs.ts)
  createReplayJob(args: { id: string; filter: ReplayFilter; total: number; nowMs: number }): Promise<ReplayJobRecord> {
    return this.replayJobs.createReplayJob(args);
  }
  getReplayJob(id: string): Promise<ReplayJobRecord | null> {
    return this.replayJobs.getReplayJob(id);
  }
  listReplayJobs(args: { after?: ReplayJobCursor; limit: number }): Promise<ReplayJobRecord[]> {
    return this.replayJobs.listReplayJobs(args);
  }
  runningReplayJobs(): Promise<ReplayJobRecord[]> {
    return this.replayJobs.runningReplayJobs();
  }
  replayJobBatch(args: ReplayJobBatchArgs): Promise<ReplayJobRecord | null> {
    return this.replayJobs.replayJobBatch(args);
  }
  createArchiveJob(args: { id: string; filter: ArchiveFilter; total: number; nowMs: number }): Promise<ReplayJobRecord> {
    return this.replayJobs.createArchiveJob(args);
  }
  archiveReplayBatch(args: ArchiveBatchArgs): Promise<ArchiveBatchResult> {
    return this.replayJobs.archiveReplayBatch(args);
  }
  countArchive(args: ArchiveCountArgs): Promise<number> {
    return this.replayJobs.countArchive(args);
  }
  cancelReplayJob(id: string, nowMs: number): Promise<ReplayJobRecord | null> {
    return this.replayJobs.cancelReplayJob(id, nowMs);
  }
  failReplayJob(id: string, error: string, nowMs: number): Promise<void> {
    return this.replayJobs.failReplayJob(id, error, nowMs);
  }

  // delivery reads (sqlite-delivery-reads.ts)
  listDeliveries(filter: DeliveryFilter): Promise<DeliveryView[]> {
    return this.reads.listDeliveries(filter);
  }
  getDelivery(id: number): Promise<DeliveryDetail | null> {
    return this.reads.getDelivery(id);
  }

  // backlog (sqlite-backlog.ts)
  backlog(): Promise<DestinationBacklog[]> {
    return this.backlogReads.backlog();
  }
  retryingCount(destinationId: string): Promise<number> {
    return this.backlogReads.retryingCount(destinationId);
  }

  // regulations (sqlite-regulations.ts)
  createRegulation(args: { id: string; userIds: string[]; sourceIds: string[] | null; nowMs: number }): Promise<Regulation> {
    return this.regulations.createRegulation(args);
  }
  getRegulation(id: string): Promise<Regulation | null> {
    return this.regulations.getRegulation(id);
  }
  listRegulations(args: { status?: Regulation['status']; after?: RegulationCursor; limit: number }): Promise<Regulation[]> {
    return this.regulations.listRegulations(args);
  }
  pendingRegulations(): Promise<Regulation[]> {
    return this.regulations.pendingRegulations();
  }
  executeRegulation(args: ExecuteRegulationArgs): Promise<Regulation> {
    return this.regulations.executeRegulation(args);
  }
  reclaimDeleted(): Promise<void> {
    return this.regulations.reclaimDeleted();
  }

  // catalogue (sqlite-catalog.ts)
  loadCatalog(): Promise<StoredCatalog> {
    return this.catalog.loadCatalog();
  }
  saveSource(source: SourceConfig): Promise<void> {
    return this.catalog.saveSource(source);
  }
  deleteSource(id: string): Promise<void> {
    return this.catalog.deleteSource(id);
  }
  saveDestination(destination: DestinationConfig): Promise<void> {
    return this.catalog.saveDestination(destination);
  }
  replaceDestination(next: DestinationConfig, previous: DestinationConfig): Promise<boolean> {
    return this.catalog.replaceDestination(next, previous);
  }
  withCatalogLock<T>(fn: () => Promise<T>): Promise<T> {
    return this.catalog.withCatalogLock(fn);
  }
  deleteDestination(id: string): Promise<void> {
    return this.catalog.deleteDestination(id);
  }
  getSetting(key: string): Promise<string | null> {
    return this.catalog.getSetting(key);
  }
  setSetting(key: string, value: string): Promise<void> {
    return this.catalog.setSetting(key, value);
  }

  // the store as a whole
  // Kept by the writes (sqlite-backlog-counts.ts, sqlite-store-totals.ts), not counted here.
  async stats(): Promise<StoreStats> {
    const totals = this.deliveries.totals.read();
    const deliveries: StoreStats['deliveries'] = { pending: 0, succeeded: totals.succeeded, dead: 0 };
    for (const r of this.deliveries.counts.rows()) {
      deliveries.pending += r.pending;
      deliveries.dead += r.dead;
    }
    const rejections = (this.db.prepare(`SELECT COALESCE(SUM(count), 0) AS n FROM rejection_counts`).get() as { n: number }).n;
    return { events: totals.events, deliveries, rejections };
  }

  async checkReady(): Promise<void> {
    this.probe.assertReady(this.clock.now());
  }

  async close(): Promise<void> {
    // Completions already handed in still commit: their jobs were sent.
    if (this.db.open) await this.completions.drained();
    // Writes queued in this very turn still commit: their callers are waiting for an answer.
    this.commits.flush();
    // Closing checkpoints the WAL and deletes it: a truncation still waiting is not needed.
    this.walTruncation.close();
    try {
      this.db.close();
    } finally {
      this.ownership?.close();
    }
  }
}
