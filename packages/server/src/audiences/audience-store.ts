import type { NewDelivery } from '../store/store.js';

/**
 * The model of audiences and computed traits, and the store contract their sync relies on.
 * Rules are data; each store dialect turns them into its own SQL over the stored events.
 */

/** An audience holds users (trait value `true`/`false`); a computed trait gives each user a number. */
export type AudienceKind = 'audience' | 'computed_trait';

/** Users with at least `minCount` track calls named `event`, optionally within the last `withinDays` days. */
export interface EventRule {
  type: 'event';
  event: string;
  minCount: number;
  withinDays?: number;
}

/** A JSON scalar a trait can be compared with. */
export type TraitScalar = string | number | boolean | null;

/** Users whose latest value of trait `trait` (from identify calls) equals `equals`. */
export interface TraitRule {
  type: 'trait';
  trait: string;
  equals: TraitScalar;
}

/** A computed trait: how many track calls named `event` the user made, optionally within the last `withinDays` days. */
export interface EventCountRule {
  type: 'event_count';
  event: string;
  withinDays?: number;
}

/** The rules an audience can have. */
export type AudienceRule = EventRule | TraitRule;
/** The rules a computed trait can have. */
export type ComputedTraitRule = EventCountRule;
/** Any rule. */
export type Rule = AudienceRule | ComputedTraitRule;

/** What an operator defines; validated by `validateAudience`. */
export interface AudienceDefinition {
  /** `[a-z0-9_-]+`, unique among audiences and computed traits together. */
  id: string;
  kind: AudienceKind;
  /** Display name; its snake_case form is the trait key sent to destinations. */
  name: string;
  /** Webhooks destinations the changes are sent to. */
  destinationIds: string[];
  /** Sources whose events count; null: every source. */
  sourceIds: string[] | null;
  rule: Rule;
}

/** A stored audience with its sync state. */
export interface AudienceRecord extends AudienceDefinition {
  createdAtMs: number;
  /** How many syncs have been committed; 0 until the first. */
  syncCount: number;
  lastSyncedAtMs: number | null;
  /** Users currently holding a value: members of an audience, users with a non-zero count for a computed trait. */
  memberCount: number;
}

/** The value sent for a user: membership for an audience, a count for a computed trait. */
export type TraitValue = boolean | number;

/** One user whose value differs from what the previous sync sent. */
export interface MembershipChange {
  userId: string;
  /** `added`: no value was sent before; `removed`: the user no longer qualifies; `changed`: a computed trait's count moved. */
  change: 'added' | 'removed' | 'changed';
  value: TraitValue;
}

/** What one committed sync did. */
export interface SyncOutcome {
  id: string;
  /** The number of this sync (1 for the first). */
  syncCount: number;
  syncedAtMs: number;
  added: number;
  removed: number;
  changed: number;
  /** Members dropped silently because a deletion request removed every event of theirs. */
  forgotten: number;
  /** Delivery jobs queued (changes times active destinations). */
  queued: number;
  memberCount: number;
}

/** The value sent when a user stops qualifying: `false` for an audience, `0` for a computed trait. */
export function absentValue(kind: AudienceKind): TraitValue {
  return kind === 'audience' ? false : 0;
}

/** The kind of resource a rule belongs to. */
export function kindOfRule(rule: Rule): AudienceKind {
  return rule.type === 'event_count' ? 'computed_trait' : 'audience';
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
  /** Deletes the audience and its stored members; jobs already queued still go out. False when unknown. */
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
