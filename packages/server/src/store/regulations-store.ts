import type { LinkedIdentitiesReport } from '../model/regulation-plan.js';

/** A deletion request and its progress. */
export interface Regulation {
  id: string;
  /** The users named, while pending; empty once done, when Ferry keeps no trace of them. */
  userIds: string[];
  /** How many users were named. */
  userCount: number;
  /** null: every source. */
  sourceIds: string[] | null;
  status: 'pending' | 'done';
  createdAt: string;
  finishedAt: string | null;
  eventsDeleted: number;
  deliveriesDeleted: number;
  notificationsQueued: number;
  /** How far alias links were followed; null until the request has fixed what it deletes. */
  linkedIdentities: LinkedIdentitiesReport | null;
}

export type { LinkedIdentitiesReport };

/** Per user named in a deletion request, the sources in scope that held events it deleted. */
export type AffectedSources = Readonly<Record<string, readonly string[]>>;

/** One notice to queue when a regulation is carried out. */
export interface DeleteNotice {
  destinationId: string;
  sourceId: string;
  userId: string;
  body: string;
}

/** What {@link RegulationsStore.executeRegulation} is given. */
export interface ExecuteRegulationArgs {
  id: string;
  nowMs: number;
  noticesFor: (affected: AffectedSources) => DeleteNotice[];
  /** Events deleted per transaction; default `defaultPurgeBatchSize`. */
  batchSize?: number;
  /** Linked user ids followed at most; default `defaultMaxLinkedUsers`. */
  maxLinkedUsers?: number;
  /** Aborted: stop at the next batch boundary, the request left pending. */
  signal?: AbortSignal;
}

/** Where a listing of regulations (newest first) starts: after this request. */
export interface RegulationCursor {
  createdAtMs: number;
  id: string;
}

/** Deletion requests (regulations): stored, carried out, and their traces reclaimed. */
export interface RegulationsStore {
  createRegulation(args: { id: string; userIds: string[]; sourceIds: string[] | null; nowMs: number }): Promise<Regulation>;
  getRegulation(id: string): Promise<Regulation | null>;
  /** Newest first (ties by id, descending), of one status when given, after `after` when given. */
  listRegulations(args: { status?: Regulation['status']; after?: RegulationCursor; limit: number }): Promise<Regulation[]>;
  pendingRegulations(): Promise<Regulation[]>;
  /**
   * Carries a pending regulation out (a done one is left as it is). First it fixes what to
   * delete (see `RegulationPlan` in model/regulation-plan.ts) and stores that with the request; then it deletes, in
   * batches of `batchSize` events (each batch a transaction of its own, so that ingestion and
   * delivery go on meanwhile), the events of the users and of the identities linked to them
   * in the sources named, with their deliveries and attempts; last, in one transaction, it
   * deletes the audience deliveries and memberships of the user ids left with no event,
   * queues the notices `noticesFor` returns (given the sources each user's events were in;
   * it must be pure), marks the request done and forgets the user ids. Resumable at any point:
   * once `signal` is aborted it stops before its next batch and resolves with the request
   * still pending. At most `maxLinkedUsers` linked user ids are followed (see
   * `LinkedIdentities`).
   */
  executeRegulation(args: ExecuteRegulationArgs): Promise<Regulation>;
  /**
   * Makes the bytes of deleted rows unreadable as far as the database allows, after a purge:
   * SQLite (which zeroes deleted content as it deletes it) checkpoints and truncates its WAL,
   * which held copies of the pages as they were; PostgreSQL vacuums the tables purged, so the
   * dead row versions' space becomes free for reuse. Each store does it at most once per its
   * interval (`walTruncateIntervalMs`, `vacuumIntervalMs`): requests within one share the run
   * at its end. Resolves when that run is done (or the store closed first); rejects when it
   * could not be done, and it is tried again an interval later.
   */
  reclaimDeleted(): Promise<void>;
}
