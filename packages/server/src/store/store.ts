import type { ActivityCounts } from './activity-counts.js';
import type { AudienceStore } from './audience-store.js';
import type { AuditLog } from './audit-log.js';
import type { BacklogReads } from './backlog.js';
import type { CatalogStore } from './catalog-store.js';
import type { DeliveryQueue, DeliveryStatus } from './delivery-queue.js';
import type { DeliveryReads } from './delivery-reads.js';
import type { DestinationHealthStore } from './destination-health.js';
import type { EventLog } from './event-log.js';
import type { RateLimitBuckets } from './rate-limit-buckets.js';
import type { RegulationsStore } from './regulations-store.js';
import type { ReplayJobsStore } from './replay-jobs-store.js';
import type { RetentionStore } from './retention-store.js';
import type { TokenStore } from './token-store.js';

/*
 * Each role's vocabulary, from one place: a caller that needs a single role can instead
 * import that role's module and depend on nothing else.
 */
export type * from './activity-counts.js';
export type * from './audience-store.js';
export type * from './audit-log.js';
export type * from './backlog.js';
export type * from './catalog-store.js';
export type * from './delivery-queue.js';
export type * from './delivery-reads.js';
export type * from './destination-health.js';
export type * from './event-log.js';
export type * from './rate-limit-buckets.js';
export type * from './regulations-store.js';
export type * from './replay-jobs-store.js';
export type * from './retention-store.js';
export type * from './token-store.js';

/** Counts for health and metrics. */
export interface StoreStats {
  events: number;
  deliveries: Record<DeliveryStatus, number>;
  rejections: number;
}

/**
 * The store: every role, implemented by SQLite (embedded, one process) and PostgreSQL
 * (several nodes), plus what concerns the store as a whole. A store is migrated when it is
 * opened (`new SqliteStore`, `PgStore.open`). Every method may reject when the underlying
 * database fails; callers map that to 503.
 *
 * Audiences, admin tokens and the audit log are roles held as properties rather than mixed
 * in: their methods (`create`, `get`, `sync`, `revoke`, `append`...) name their own
 * operations, not the store's.
 */
export interface Store extends EventLog, DeliveryQueue, DeliveryReads, BacklogReads, RegulationsStore, ReplayJobsStore, CatalogStore {
  /** Which implementation this is, for logs. */
  readonly kind: 'sqlite' | 'postgres';
  /** Audiences and computed traits, on the same database (a sync's jobs commit with its members). */
  readonly audiences: AudienceStore;
  /** Admin tokens made through the admin API, by the hashes of their values. */
  readonly tokens: TokenStore;
  /** Changes made through the admin API. */
  readonly audit: AuditLog;
  /** Whether each destination fails, and Ferry's disabling of one that failed too long. */
  readonly health: DestinationHealthStore;
  /**
   * Rate limits' token buckets shared by the nodes of a cluster (PostgreSQL); undefined where one
   * process owns the store (SQLite), whose rate limits keep their buckets in memory.
   */
  readonly rateLimitBuckets: RateLimitBuckets | undefined;
  /** Pruning what is past its retention, and the size the store takes (retention/pruner.ts). */
  readonly retention: RetentionStore;
  /** Per-minute counts of what each node did, for the admin API's series (`metrics/activity-series.ts`). */
  readonly activity: ActivityCounts;
  stats(): Promise<StoreStats>;
  /**
   * Whether an error this store threw means its database is unavailable (locked, full, down,
   * unreachable) rather than a fault in Ferry: requests answer 503 `store_unavailable` for it.
   */
  isUnavailable(error: unknown): boolean;
  /**
   * Resolves when the store can serve; rejects with the reason otherwise (the readiness check,
   * `GET /health/ready`). SQLite: the last write succeeded, or a test write does now.
   * PostgreSQL: the server answers a query. Cheap enough for a probe every few seconds.
   */
  checkReady(): Promise<void>;
  /** Finishes the work already handed in (completions, queued writes), then lets the database go. */
  close(): Promise<void>;
}
