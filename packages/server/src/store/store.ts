import type { AudienceStore } from './audience-store.js';
import type { BacklogReads } from './backlog.js';
import type { CatalogStore } from './catalog-store.js';
import type { DeliveryQueue, DeliveryStatus } from './delivery-queue.js';
import type { DeliveryReads } from './delivery-reads.js';
import type { EventLog } from './event-log.js';
import type { RegulationsStore } from './regulations-store.js';

/*
 * Each role's vocabulary, from one place: a caller that needs a single role can instead
 * import that role's module and depend on nothing else.
 */
export type * from './audience-store.js';
export type * from './backlog.js';
export type * from './catalog-store.js';
export type * from './delivery-queue.js';
export type * from './delivery-reads.js';
export type * from './event-log.js';
export type * from './regulations-store.js';

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
 * Audiences are a role held as a property rather than mixed in: their methods (`create`,
 * `get`, `sync`...) name audience operations, not store ones.
 */
export interface Store extends EventLog, DeliveryQueue, DeliveryReads, BacklogReads, RegulationsStore, CatalogStore {
  /** Which implementation this is, for logs. */
  readonly kind: 'sqlite' | 'postgres';
  /** Audiences and computed traits, on the same database (a sync's jobs commit with its members). */
  readonly audiences: AudienceStore;
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
