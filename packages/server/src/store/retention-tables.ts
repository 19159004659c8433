import type { RetentionKind } from '../model/retention.js';

/** Where each kind of retention lives, in SQL both stores understand. */
export interface RetentionTable {
  table: 'events' | 'deliveries' | 'rejections' | 'audit_log';
  /**
   * When a row arrived: rows come in id order by it (near enough across PostgreSQL nodes), so
   * the first row of a batch at or past the cutoff ends the run.
   */
  arrivedColumn: string;
  /** Which of the rows looked at may go, given the cutoff as the parameter `cutoff`. */
  eligible: string;
  /** Whether the kind's attempts go with it. */
  withAttempts: boolean;
}

export const retentionTables: Record<RetentionKind, RetentionTable> = {
  events: {
    table: 'events',
    arrivedColumn: 'received_at',
    // A pending delivery (a retrying one included) may still need its event: a replay, a search.
    eligible: `received_at < :cutoff AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id AND d.status = 'pending')`,
    withAttempts: false,
  },
  delivered: {
    table: 'deliveries',
    arrivedColumn: 'created_at',
    eligible: `status = 'succeeded' AND completed_at < :cutoff`,
    withAttempts: true,
  },
  deadLetters: {
    table: 'deliveries',
    arrivedColumn: 'created_at',
    eligible: `status = 'dead' AND completed_at < :cutoff`,
    withAttempts: true,
  },
  rejections: { table: 'rejections', arrivedColumn: 'received_at', eligible: `received_at < :cutoff`, withAttempts: false },
  auditLog: { table: 'audit_log', arrivedColumn: 'at', eligible: `at < :cutoff`, withAttempts: false },
};

/**
 * Of the rows a batch looked at (id order), those before the first one that arrived at or
 * after the cutoff, and whether that one was found (then no later row can be old enough).
 */
export function beforeCutoff<T extends { id: number; arrived: number }>(rows: T[], cutoffMs: number): { candidates: T[]; reachedCutoff: boolean } {
  const stop = rows.findIndex((r) => Number(r.arrived) >= cutoffMs);
  return stop === -1 ? { candidates: rows, reachedCutoff: false } : { candidates: rows.slice(0, stop), reachedCutoff: true };
}
