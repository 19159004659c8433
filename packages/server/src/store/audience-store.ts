import type { AudienceDefinition, AudienceKind, AudienceRecord, MembershipChange, SyncEntry, SyncOutcome, SyncRecord, TraitValue } from '../model/audience.js';
import type { NewDelivery } from './delivery-queue.js';

/** A user holding a value of an audience (`true`) or computed trait (its count). */
export interface AudienceMember {
  userId: string;
  value: TraitValue;
}

/**
 * Where audiences, their current members and their sync state live; implemented for SQLite
 * and for PostgreSQL behind this one contract.
 */
export interface AudienceStore {
  /** Stores a new audience; false when the id is already taken (by an audience or a computed trait). */
  create(definition: AudienceDefinition, nowMs: number): Promise<boolean>;
  get(id: string): Promise<AudienceRecord | null>;
  /** Every audience of one kind, ordered by id. */
  list(kind: AudienceKind): Promise<AudienceRecord[]>;
  /**
   * Changes an audience's name, destinations, sources and rule; its id, kind, members and sync
   * state stay. The members are compared with the new rule at the next sync. False when unknown.
   */
  update(definition: AudienceDefinition): Promise<boolean>;
  /** Current members in user id order, after `afterUserId` when given: each with the value last queued for it. */
  members(id: string, args: { afterUserId?: string; limit: number }): Promise<AudienceMember[]>;
  /**
   * How many users qualify now (at `nowMs`) under a definition's rule and sources, counted as
   * a sync counts its members (the same query), without storing, queuing or changing
   * anything: a preview. For a computed trait, the users who would hold a non-zero count.
   */
  countQualifying(definition: Pick<AudienceDefinition, 'rule' | 'sourceIds'>, nowMs: number): Promise<number>;
  /**
   * Adds a sync that ran (done or failed) to the audience's history: a quiet one (nothing
   * changed) folds into the newest entry when that is quiet too with the same member count.
   * Keeps the newest `syncHistoryLimit` entries (audience-rows.ts).
   */
  recordSync(entry: SyncEntry): Promise<void>;
  /** The audience's sync history newest first: entries with an id below `beforeId` when given. */
  syncs(id: string, args: { beforeId?: number; limit: number }): Promise<SyncRecord[]>;
  /** Deletes the audience, its stored members and its sync history; jobs already queued still go out. False when unknown. */
  delete(id: string): Promise<boolean>;
  /**
   * Syncs one audience in ONE transaction: computes who qualifies now (at `nowMs`), diffs
   * that with the stored members, queues the delivery jobs `deliveriesFor` returns for the
   * changes, stores the new members and bumps the sync count. A crash therefore neither
   * sends a change twice nor loses one. `deliveriesFor` runs inside the transaction and
   * must be pure (no I/O). Resolves with null when the audience does not exist.
   */
  sync(args: {
    id: string;
    nowMs: number;
    deliveriesFor: (audience: AudienceRecord, changes: readonly MembershipChange[], syncCount: number) => NewDelivery[];
  }): Promise<SyncOutcome | null>;
}
