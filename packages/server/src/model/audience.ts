/**
 * The model of audiences and computed traits: definitions, rules, sync outcomes. Rules are
 * data; each store dialect turns them into its own SQL over the stored events. It imports
 * nothing, so the store (which keeps audiences) and the audiences stage (which syncs them)
 * both build on it without either reaching into the other.
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
  /** Display name; its snake_case form is the trait key sent to destinations, unless `trait` is set. */
  name: string;
  /**
   * The trait key sent, when it is no longer the snake_case form of `name`: set when an
   * audience is renamed, so that receivers keep getting the key they already hold.
   */
  trait?: string;
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

/**
 * One entry of an audience's sync history: one sync, or a run of consecutive quiet syncs
 * (done, nothing changed, the same member count) folded into one entry so that a sync loop
 * running every minute does not push the syncs that changed something out of the history.
 */
export interface SyncRecord {
  /** Grows with each entry: newer entries have larger ids. */
  id: number;
  audienceId: string;
  /** When the (first) sync started. */
  startedAtMs: number;
  /** When the (last) sync finished, or failed. */
  finishedAtMs: number;
  /** How many syncs the entry stands for: 1, or more for a run of quiet ones. */
  runs: number;
  /** The number of the (last) sync; null for a failed one, which counts for nothing. */
  syncCount: number | null;
  /** The figures of a sync that was done; null when it failed (it changed nothing). */
  added: number | null;
  removed: number | null;
  changed: number | null;
  forgotten: number | null;
  queued: number | null;
  memberCount: number | null;
  /** Why the sync failed; null when it was done. */
  error: string | null;
}

/** What a sync that ran leaves in the history: its outcome, or its failure. */
export type SyncEntry =
  | { audienceId: string; startedAtMs: number; finishedAtMs: number; outcome: SyncOutcome }
  | { audienceId: string; startedAtMs: number; finishedAtMs: number; error: string };

/** The value sent when a user stops qualifying: `false` for an audience, `0` for a computed trait. */
export function absentValue(kind: AudienceKind): TraitValue {
  return kind === 'audience' ? false : 0;
}
