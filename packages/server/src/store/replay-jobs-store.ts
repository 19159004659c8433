import type { ReplayFilter } from './delivery-queue.js';

/** A bulk replay run in batches, with its progress. */
export interface ReplayJobRecord {
  id: string;
  /** `running` until every batch is done (`done`), or a batch failed (`failed`, with `error`). */
  status: 'running' | 'done' | 'failed';
  /** What it replays: the request's filter, `untilMs` at most the job's creation. */
  filter: ReplayFilter;
  /** Dead letters that matched when the job was created. */
  total: number;
  /** Dead letters replayed so far. */
  replayed: number;
  createdAtMs: number;
  finishedAtMs: number | null;
  error: string | null;
}

/** Where a listing of replay jobs (newest first) starts: after this job. */
export interface ReplayJobCursor {
  createdAtMs: number;
  id: string;
}

/** What one batch of a replay job is given. */
export interface ReplayJobBatchArgs {
  id: string;
  /** Dead letters replayed at most by this batch. */
  limit: number;
  nowMs: number;
  /** The destinations that exist now: a dead letter of a deleted one has nowhere to go and stays dead. */
  destinationIdsIn: string[];
}

/**
 * Replay jobs: bulk replays too large for one transaction, kept in the store so that any node
 * (or the same one after a restart) carries a running job on from where it stopped.
 */
export interface ReplayJobsStore {
  createReplayJob(args: { id: string; filter: ReplayFilter; total: number; nowMs: number }): Promise<ReplayJobRecord>;
  getReplayJob(id: string): Promise<ReplayJobRecord | null>;
  /** Newest first (ties by id, descending), after `after` when given. */
  listReplayJobs(args: { after?: ReplayJobCursor; limit: number }): Promise<ReplayJobRecord[]>;
  /** Every job still running, oldest first: what a start carries on. */
  runningReplayJobs(): Promise<ReplayJobRecord[]>;
  /**
   * Replays the next batch of a running job, in one transaction with its progress: the dead
   * letters of its filter with ids after the job's cursor, in id order, at most `limit`. The
   * job is locked meanwhile, so two nodes carrying it on take turns and count each letter once.
   * A batch that finds fewer than `limit` marks the job done. Resolves with the job as it
   * stands after the batch (as it is, when it is not running or does not exist: null).
   */
  replayJobBatch(args: ReplayJobBatchArgs): Promise<ReplayJobRecord | null>;
  /** Marks a running job failed with the reason; a job not running is left as it is. */
  failReplayJob(id: string, error: string, nowMs: number): Promise<void>;
}
