import type { RetentionKind } from '../model/retention.js';

/** One batch of a prune: rows of one kind, in id order after `afterId`. */
export interface PruneBatchRequest {
  kind: RetentionKind;
  /** Rows older than this (ms since the epoch) go. */
  cutoffMs: number;
  /** The last id the previous batch of this run looked at; 0 at the start. */
  afterId: number;
  /** The most rows the batch looks at. */
  limit: number;
}

/** What a batch did. */
export interface PruneBatchResult {
  /** Rows of the kind deleted (attempts not counted). */
  deleted: number;
  /** Attempts deleted with the deliveries. */
  attemptsDeleted: number;
  /** The last id looked at: the next batch starts after it. */
  lastId: number;
  /** True when no later row of this kind can be old enough: the run is over for the kind. */
  done: boolean;
  /** True when another node holds the prune lock (PostgreSQL): this node leaves the run to it. */
  busy: boolean;
}

/** Estimated row count of each table that retention prunes. */
export type StoreRowEstimates = Record<'events' | 'deliveries' | 'attempts' | 'rejections' | 'audit_log', number>;

/**
 * Deleting what is past its retention, in small batches (see retention/pruner.ts), and what
 * the store's size metrics read. Rows are looked at in id order, which is their order of
 * arrival: a batch stops at the first row too young for the cutoff, so a run reads little more
 * than what it deletes. The newest row of a table is never deleted, so that SQLite never gives
 * its id to a new row.
 */
export interface RetentionStore {
  /** Deletes one batch in one transaction. Pending deliveries, and events they need, are kept. */
  pruneBatch(request: PruneBatchRequest): Promise<PruneBatchResult>;
  /**
   * Gives space freed by deletions back: SQLite frees up to `maxPages` pages of the file
   * (incremental vacuum) when free pages are a large share of it, and answers how many are
   * left worth freeing (0: done); PostgreSQL vacuums a table with many dead rows (pruned, or
   * left by the delivery queue and by updates) when autovacuum does not cover it, and answers 0.
   */
  reclaimSpace(maxPages: number): Promise<number>;
  /** Bytes the store takes: SQLite's file, PostgreSQL's tables of its schema with their indexes. */
  sizeBytes(): Promise<number>;
  /** Row counts, estimated without reading the tables (see docs/operations.md). */
  rowEstimates(): Promise<StoreRowEstimates>;
}
