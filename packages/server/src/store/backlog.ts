/** What waits, and what was given up, for one destination. */
export interface DestinationBacklog {
  destinationId: string;
  /** Jobs waiting to be sent: due, leased or waiting for a retry. */
  pending: number;
  /** Dead letters (replayable). */
  dead: number;
  /** When the oldest pending job was created (a replayed dead letter keeps its first creation); null with none pending. */
  oldestPendingCreatedAtMs: number | null;
}

/**
 * The backlog per destination, for metrics and the per-destination stats. On SQLite the
 * counts are kept by the store's writes and read as a row per destination; on PostgreSQL they
 * are read by an index-only query over the narrow queue table (docs/operations.md,
 * "Monitoring", has the cost of each on a backlog of a million).
 */
export interface BacklogReads {
  /** Every destination with at least one pending job or dead letter, in id order. */
  backlog(): Promise<DestinationBacklog[]>;
  /**
   * Pending jobs of one destination with at least one attempt in their current retry window.
   * Reads that destination's pending jobs: for the stats of one destination, not for a scrape.
   */
  retryingCount(destinationId: string): Promise<number>;
}
