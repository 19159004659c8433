import type { ReplayFilter } from './delivery-queue.js';

/** Which stored events an archive replay sends again, and to which destination. */
export interface ArchiveFilter {
  destinationId: string;
  /** The sources whose events it sends (each one the destination is routed from when the job was made). */
  sourceIds: string[];
  /** Events received at or after this time. */
  sinceMs: number;
  /** Events received before this time. */
  untilMs: number;
  /** At most this many events sent on per second, on average; absent: as fast as the destination's backlog allows. */
  ratePerSecond?: number;
}

/** What every replay job has, whatever it replays. */
interface ReplayJobCommon {
  id: string;
  /** `running` until every batch is done (`done`), a batch failed (`failed`, with `error`), or an operator cancelled it (`cancelled`). */
  status: 'running' | 'done' | 'failed' | 'cancelled';
  /** Dead letters (or events) that matched when the job was created. */
  total: number;
  /** Dead letters replayed (or deliveries created) so far. */
  replayed: number;
  /** Events an archive job passed over: the destination's filter or `integrations` dropped them, or their user is being deleted. 0 for dead letters. */
  skipped: number;
  /**
   * Where the next batch starts: after this dead letter id (`receivedAtMs` null), or after this
   * event in (received_at, id) order (an archive job).
   */
  cursor: { receivedAtMs: number | null; id: number };
  createdAtMs: number;
  finishedAtMs: number | null;
  error: string | null;
}

/** A bulk replay run in batches, with its progress: of dead letters, or of stored events (the archive). */
export type ReplayJobRecord = ReplayJobCommon &
  (
    | {
        kind: 'dead_letters';
        /** What it replays: the request's filter, `untilMs` at most the job's creation. */
        filter: ReplayFilter;
      }
    | { kind: 'archive'; filter: ArchiveFilter }
  );

/** The kinds of replay job. */
export type ReplayJobKind = ReplayJobRecord['kind'];

/** A stored event as an archive replay reads it, to route it as ingestion would have. */
export interface ArchivedEvent {
  id: number;
  sourceId: string;
  messageId: string;
  userId: string | null;
  anonymousId: string | null;
  /** The normalised message as stored. */
  json: string;
}

/** What an archive renderer answers for an event it has no route for: the batch is held, not the event skipped. */
export const unrouted: unique symbol = Symbol('unrouted');

/** What one batch of an archive replay job is given. */
export interface ArchiveBatchArgs {
  id: string;
  /** Events looked at most by this batch. */
  limit: number;
  nowMs: number;
  /**
   * The batch waits (does nothing, `held: true`) while the destination has at least this many
   * pending deliveries: live traffic goes first, the replay fills what capacity is left. It
   * waits too before the job's `nextBatchAtMs` (its rate, kept on the job for every node).
   */
  backlogLimit: number;
  /**
   * The body the destination gets for an event, or null when its filter or `integrations` drop
   * it (counted skipped), or `unrouted` when this node knows no route from the event's source
   * to the destination (the destination was disabled meanwhile, or the source is not yet seen):
   * then the whole batch is held, nothing done, and the cursor stays. Pure.
   */
  render: (event: ArchivedEvent) => string | null | typeof unrouted;
}

/** What an archive batch did. */
export interface ArchiveBatchResult {
  /** The job as it stands after the batch; null when it does not exist. */
  job: ReplayJobRecord | null;
  /** True when the destination's backlog held the batch back: nothing was done. */
  held: boolean;
  /** Deliveries this batch created. */
  queued: number;
  /**
   * A job with a `ratePerSecond`: the time before which no batch runs, on any node (after a
   * batch that made n deliveries, n / rate seconds later). A batch asked earlier is held. Null
   * when the job has no rate or is not paced now.
   */
  nextBatchAtMs: number | null;
}

/** Which events an archive replay (or its dry run) counts. */
export interface ArchiveCountArgs {
  destinationId: string;
  sourceIds: string[];
  sinceMs: number;
  untilMs: number;
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
  /** Stores a running archive replay job, its cursor just before `filter.sinceMs`. */
  createArchiveJob(args: { id: string; filter: ArchiveFilter; total: number; nowMs: number }): Promise<ReplayJobRecord>;
  getReplayJob(id: string): Promise<ReplayJobRecord | null>;
  /** Newest first (ties by id, descending), after `after` when given. */
  listReplayJobs(args: { after?: ReplayJobCursor; limit: number }): Promise<ReplayJobRecord[]>;
  /** Every job still running, oldest first: what a start carries on. */
  runningReplayJobs(): Promise<ReplayJobRecord[]>;
  /**
   * Replays the next batch of a running dead-letter job, in one transaction with its progress: the dead
   * letters of its filter with ids after the job's cursor, in id order, at most `limit`. The
   * job is locked meanwhile, so two nodes carrying it on take turns and count each letter once.
   * A batch that finds fewer than `limit` marks the job done. Resolves with the job as it
   * stands after the batch (as it is, when it is not running or does not exist: null).
   */
  replayJobBatch(args: ReplayJobBatchArgs): Promise<ReplayJobRecord | null>;
  /**
   * Sends on the next batch of a running archive job, in one transaction with its progress,
   * under the job row's lock (as {@link replayJobBatch}): unless the destination's backlog is at
   * `backlogLimit` (then nothing is done), the events of its sources received in its range after
   * its cursor, in (received_at, id) order, at most `limit`, that the destination has no
   * delivery for; each becomes a delivery with the event's source, messageId and user, due at
   * once, unless `render` drops it or its user is named by a pending deletion request in the
   * event's source (counted in `skipped`). A batch that finds fewer than `limit` marks the job done.
   */
  archiveReplayBatch(args: ArchiveBatchArgs): Promise<ArchiveBatchResult>;
  /**
   * How many events an archive replay would take now: those of the sources received in the
   * range that the destination has no delivery for, and whose user no pending deletion request
   * names (the destination's filter is not applied: a job counts what it drops in `skipped`).
   */
  countArchive(args: ArchiveCountArgs): Promise<number>;
  /** Marks a running job cancelled; resolves with it as it stands (null when it does not exist). */
  cancelReplayJob(id: string, nowMs: number): Promise<ReplayJobRecord | null>;
  /** Marks a running job failed with the reason; a job not running is left as it is. */
  failReplayJob(id: string, error: string, nowMs: number): Promise<void>;
}
