import type { DestinationConfig, SourceConfig } from '../../config/model.js';
import { PgActivityCounts } from './pg-activity-counts.js';
import type { AudienceStore } from '../audience-store.js';
import type { AuditLog } from '../audit-log.js';
import type { DestinationHealthStore } from '../destination-health.js';
import type { RateLimitBuckets } from '../rate-limit-buckets.js';
import type { StoredCatalog } from '../catalog-store.js';
import type { ClaimedDelivery, ClaimRequest, Completion, HeldLease, NewDelivery, ReplayDeliveryOutcome, ReplayFilter } from '../delivery-queue.js';
import type { DeliveryDetail, DeliveryFilter, DeliveryView } from '../delivery-reads.js';
import type { DestinationBacklog } from '../backlog.js';
import { PgBacklog } from './pg-backlog.js';
import { PgStoreTotals } from './pg-store-totals.js';
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
import { systemClock, type Clock } from '../../util/clock.js';
import { PgAudienceStore } from './pg-audience-store.js';
import { PgAuditLog } from './pg-audit-log.js';
import { PgDestinationHealth } from './pg-destination-health.js';
import { PgRateLimitBuckets } from './pg-rate-limit-buckets.js';
import { PgCatalog } from './pg-catalog.js';
import { claim, nextDueAt } from './pg-claim.js';
import { PgCompletions } from './pg-complete.js';
import { abandonPending, countReplayable, replay } from './pg-dead-letters.js';
import { replayDelivery } from './pg-replay-delivery.js';
import { PgDeliveryReads } from './pg-delivery-reads.js';
import { insertLoose } from './pg-delivery-rows.js';
import { PgEventLog } from './pg-event-log.js';
import { isPgUnavailable } from './pg-failure.js';
import { migrate } from './pg-migrate.js';
import { createPools, endPools, type PgPools } from './pg-pools.js';
import { PgRegulations } from './pg-regulations.js';
import { PgReplayJobs } from './pg-replay-jobs.js';
import { PgRetention } from './pg-retention.js';
import { releaseLeases, renewLeases } from './pg-release.js';
import { PgTokenStore } from './pg-token-store.js';

/** Options of the PostgreSQL store. */
export interface PgStoreOptions {
  /** A `postgres://` connection string. */
  connectionString: string;
  /** Schema holding Ferry's tables (created if missing); default `public`. Tests use one per test. */
  schema?: string;
  /** Connections in the pool; default 10. */
  poolSize?: number;
  /** Time and timers of the vacuums' interval and of folding the backlog's counts; default the system clock and Node's timers. */
  clock?: Clock;
  /** Least time, in ms, between two vacuums after deletions (see `reclaimDeleted`); default `defaultVacuumIntervalMs`. */
  vacuumIntervalMs?: number;
}

const schemaName = /^[a-z_][a-z0-9_]*$/;

/**
 * The store for several nodes: PostgreSQL through connection pools (pg-pools.ts). Every node
 * claims due jobs with `FOR UPDATE SKIP LOCKED` under a lease (pg-claim.ts), so nodes never
 * send the same job at once and a node that dies leaves jobs that another picks up when the
 * lease runs out. Each ingestion request commits in its own transaction before it is
 * answered. This class ties the parts together: each role method hands its work to the module
 * of its concern.
 */
export class PgStore implements Store {
  readonly kind = 'postgres' as const;
  readonly isUnavailable = isPgUnavailable;
  /**
   * A claim takes a few milliseconds (it commits durably), which a destination answering in one
   * millisecond must not spend idle: with 80 held ready, a slot found nothing ready a quarter
   * of the time (see delivery/ready-limits.ts).
   */
  readonly defaultClaimBatchSize = 400;
  readonly audiences: AudienceStore;
  readonly tokens: TokenStore;
  readonly audit: AuditLog;
  readonly health: DestinationHealthStore;
  readonly rateLimitBuckets: RateLimitBuckets | undefined;
  readonly retention: RetentionStore;
  readonly activity: ActivityCounts;
  private readonly eventLog: PgEventLog;
  private readonly completions: PgCompletions;
  private readonly reads: PgDeliveryReads;
  private readonly backlogReads: PgBacklog;
  private readonly totals: PgStoreTotals;
  private readonly clock: Clock;
  private readonly regulations: PgRegulations;
  private readonly replayJobs: PgReplayJobs;
  private readonly catalog: PgCatalog;

  private constructor(
    private readonly pools: PgPools,
    options: PgStoreOptions,
  ) {
    this.eventLog = new PgEventLog(pools.main);
    this.completions = new PgCompletions(pools);
    this.reads = new PgDeliveryReads(pools.main);
    this.clock = options.clock ?? systemClock;
    this.backlogReads = new PgBacklog(pools.main);
    this.totals = new PgStoreTotals(pools.main);
    this.regulations = new PgRegulations(pools.main, options);
    this.catalog = new PgCatalog(pools.main);
    this.replayJobs = new PgReplayJobs(pools.main);
    this.audiences = new PgAudienceStore(pools.main);
    this.tokens = new PgTokenStore(pools.main);
    this.audit = new PgAuditLog(pools.main);
    this.health = new PgDestinationHealth(pools.main);
    this.rateLimitBuckets = new PgRateLimitBuckets(pools.main);
    this.retention = new PgRetention(pools.main);
    this.activity = new PgActivityCounts(pools.main);
  }

  /** Connects, creates the schema if needed, and applies pending migrations. */
  static async open(options: PgStoreOptions): Promise<PgStore> {
    const schema = options.schema ?? 'public';
    if (!schemaName.test(schema)) throw new Error(`invalid schema name ${JSON.stringify(schema)}`);
    const pools = createPools(options.connectionString, schema, options.poolSize ?? 10);
    try {
      await migrate(pools.main, schema);
    } catch (error) {
      await endPools(pools);
      throw error;
    }
    return new PgStore(pools, options);
  }

  // event log (pg-event-log.ts)
  ingest(write: IngestWrite): Promise<IngestOutcome> {
    this.backlogReads.foldSoon(this.clock.now());
    this.totals.foldSoon(this.clock.now());
    return this.eventLog.ingest(write);
  }
  listRejections(args: { sourceId?: string; limit: number }): Promise<RejectionView[]> {
    return this.eventLog.listRejections(args);
  }
  rejectionCounts(): Promise<RejectionCount[]> {
    return this.eventLog.rejectionCounts();
  }

  // delivery queue (pg-claim.ts, pg-complete.ts, pg-release.ts, pg-dead-letters.ts)
  nextDueAt(destinationIds: string[]): Promise<number | null> {
    return nextDueAt(this.pools.main, destinationIds);
  }
  claim(args: ClaimRequest): Promise<ClaimedDelivery[]> {
    return claim(this.pools.claim, args);
  }
  complete(completion: Completion): Promise<boolean> {
    this.backlogReads.foldSoon(this.clock.now());
    this.totals.foldSoon(this.clock.now());
    return this.completions.complete(completion);
  }
  releaseLeases(owner: string, nowMs: number, leases?: readonly HeldLease[]): Promise<number> {
    return releaseLeases(this.pools.main, owner, nowMs, leases);
  }
  renewLeases(owner: string, ids: readonly number[], untilMs: number): Promise<number[]> {
    return renewLeases(this.pools.main, owner, ids, untilMs);
  }
  abandonPending(destinationId: string, nowMs: number): Promise<number> {
    return abandonPending(this.pools.main, destinationId, nowMs);
  }
  async enqueue(deliveries: NewDelivery[], nowMs: number): Promise<void> {
    if (deliveries.length === 0) return;
    await insertLoose(this.pools.main, deliveries, nowMs);
  }
  async replay(filter: ReplayFilter, nowMs: number): Promise<number> {
    return (await replay(this.pools.main, filter, nowMs)).replayed;
  }
  replayDelivery(args: { id: number; destinationIdsIn: readonly string[] }, nowMs: number): Promise<ReplayDeliveryOutcome> {
    return replayDelivery(this.pools.main, args, nowMs);
  }
  countReplayable(filter: ReplayFilter): Promise<number> {
    return countReplayable(this.pools.main, filter);
  }

  // replay jobs (pg-replay-jobs.ts)
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

  // delivery reads (pg-delivery-reads.ts)
  listDeliveries(filter: DeliveryFilter): Promise<DeliveryView[]> {
    return this.reads.listDeliveries(filter);
  }
  getDelivery(id: number): Promise<DeliveryDetail | null> {
    return this.reads.getDelivery(id);
  }

  // backlog (pg-backlog.ts)
  backlog(): Promise<DestinationBacklog[]> {
    return this.backlogReads.backlog();
  }
  retryingCount(destinationId: string): Promise<number> {
    return this.backlogReads.retryingCount(destinationId);
  }

  // regulations (pg-regulations.ts)
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

  // catalogue (pg-catalog.ts)
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
  // Kept by triggers as the tables change (migration 15, pg-store-totals.ts), not counted here.
  async stats(): Promise<StoreStats> {
    const [totals, rejections] = await Promise.all([
      this.totals.read(),
      this.pools.main.query<{ n: number }>(`SELECT COALESCE(SUM(count), 0)::bigint AS n FROM rejection_counts`),
    ]);
    const { events, ...deliveries } = totals;
    return { events, deliveries, rejections: rejections.rows[0]!.n };
  }

  /** The server answers a query (the schema was migrated before the store was opened). */
  async checkReady(): Promise<void> {
    await this.pools.main.query('SELECT 1');
  }

  async close(): Promise<void> {
    // Completions already handed in still reach the database: their jobs were sent.
    await this.completions.drained();
    await this.backlogReads.settled();
    await this.totals.settled();
    this.regulations.close();
    await endPools(this.pools);
  }
}
