/** What the activity series counts, per minute: messages stored, and deliveries' outcomes. */
export type ActivityKind = 'accepted' | 'delivered' | 'retried' | 'dead';

/** The kinds of the activity series, in the order its answers show them. */
export const activityKinds: readonly ActivityKind[] = ['accepted', 'delivered', 'retried', 'dead'];

/** A count of one kind in one minute. */
export interface ActivityCount {
  /** The start of the minute, ms since the epoch (a multiple of 60,000). */
  minuteMs: number;
  kind: ActivityKind;
  count: number;
}

/**
 * Per-minute counts of what the nodes did (`GET /admin/v1/series`), one row per node, minute
 * and kind: each node adds its closed minutes once a minute, so that an answer is a sum over
 * at most a day of minutes, never a read of the events or the deliveries.
 */
export interface ActivityCounts {
  /**
   * Adds `counts` to the node's rows (a row that exists grows), and deletes every node's rows
   * of minutes before `deleteBeforeMs`, in one transaction.
   */
  add(node: string, counts: readonly ActivityCount[], deleteBeforeMs: number): Promise<void>;
  /** Every node's counts summed per minute and kind, for minutes from `fromMs` on. */
  totals(fromMs: number): Promise<ActivityCount[]>;
}
