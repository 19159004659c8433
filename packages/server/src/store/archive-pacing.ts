import type { ArchiveFilter } from './replay-jobs-store.js';
import type { ReplayJobRow } from './rows.js';

/**
 * The rate of an archive job is kept on its row (`next_batch_at`), not by the node running it:
 * on PostgreSQL every node's sweep takes up running jobs, and each pacing itself would send
 * the rate times the number of nodes.
 */

/** When the job's rate lets its next batch run, if that is after `nowMs`; null when it may run now. */
export function pacedUntil(row: ReplayJobRow, nowMs: number): number | null {
  const at = row.next_batch_at === null ? null : Number(row.next_batch_at);
  return at !== null && at > nowMs ? at : null;
}

/** The `next_batch_at` after a batch that made `queued` deliveries: n / rate seconds on, or null for a job without a rate. */
export function nextBatchAt(row: ReplayJobRow, queued: number, nowMs: number): number | null {
  const rate = (JSON.parse(row.filter) as ArchiveFilter).ratePerSecond;
  if (rate === undefined || queued === 0) return null;
  return nowMs + Math.ceil((queued * 1000) / rate);
}
