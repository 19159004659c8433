import type { AudienceMember } from './audience-store.js';
import { storedText } from './rows.js';
import {
  absentValue,
  type AudienceDefinition,
  type AudienceKind,
  type AudienceRecord,
  type MembershipChange,
  type Rule,
  type SyncEntry,
  type SyncOutcome,
  type SyncRecord,
  type TraitValue,
} from '../model/audience.js';

/**
 * What the SQL audience stores share: the row shape and its mapping, the select, and the
 * pure steps of a sync (the diff of current and stored members, the outcome). Each store
 * keeps only its own SQL and transaction.
 */

export const dayMs = 86_400_000;

export interface AudienceRow {
  id: string;
  kind: AudienceKind;
  name: string;
  config: string;
  created_at: number;
  sync_count: number;
  last_synced_at: number | null;
  member_count: number;
}

/** The part of a definition kept as JSON in `audiences.config`. */
export interface StoredConfig {
  destinationIds: string[];
  sourceIds: string[] | null;
  rule: Rule;
  /** The trait key, once it differs from the name's snake_case form (a rename). */
  trait?: string;
}

/** What `audiences.config` keeps of a definition. */
export function storedConfig(d: AudienceDefinition): StoredConfig {
  return { destinationIds: d.destinationIds, sourceIds: d.sourceIds, rule: d.rule, ...(d.trait === undefined ? {} : { trait: d.trait }) };
}

/** An `audiences` row (with its member count) as a record. */
export function toRecord(r: AudienceRow): AudienceRecord {
  const config = JSON.parse(r.config) as StoredConfig;
  return {
    id: r.id,
    kind: r.kind,
    name: r.name,
    destinationIds: config.destinationIds,
    sourceIds: config.sourceIds,
    rule: config.rule,
    ...(config.trait === undefined ? {} : { trait: config.trait }),
    createdAtMs: r.created_at,
    syncCount: r.sync_count,
    lastSyncedAtMs: r.last_synced_at,
    memberCount: r.member_count,
  };
}

/** An `audience_members` row as the admin API lists it. */
export function toMember(r: { user_id: string; value: string }): AudienceMember {
  return { userId: r.user_id, value: JSON.parse(r.value) as TraitValue };
}

/** Audiences with their member counts; append a WHERE clause as needed. */
export const selectAudience = `
  SELECT a.*, (SELECT COUNT(*) FROM audience_members m WHERE m.audience_id = a.id) AS member_count
  FROM audiences a`;

/**
 * Compares current members (user id to JSON value) with the stored ones: who joined or
 * changed value, and who is no longer a member.
 */
export function diffMembers(current: ReadonlyMap<string, string>, stored: ReadonlyMap<string, string>): { changes: MembershipChange[]; left: string[] } {
  const changes: MembershipChange[] = [];
  for (const [userId, value] of current) {
    const before = stored.get(userId);
    if (before === value) continue;
    changes.push({ userId, change: before === undefined ? 'added' : 'changed', value: JSON.parse(value) as TraitValue });
  }
  return { changes, left: [...stored.keys()].filter((userId) => !current.has(userId)) };
}

/**
 * Adds the members who left to the changes, except those with no stored event left: a
 * deletion request removed them, and an identify would recreate at the receiver the user it
 * was told to delete, so they are only forgotten. Changes come out sorted by user id, so the
 * jobs (and the receiver) see them in a stable order on every store.
 */
export function settleLeavers(
  changes: MembershipChange[],
  left: readonly string[],
  withEvents: ReadonlySet<string>,
  kind: AudienceKind,
): { changes: MembershipChange[]; forgotten: string[] } {
  const forgotten: string[] = [];
  for (const userId of left) {
    if (withEvents.has(userId)) changes.push({ userId, change: 'removed', value: absentValue(kind) });
    else forgotten.push(userId);
  }
  changes.sort((a, b) => (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0));
  return { changes, forgotten };
}

/** The outcome reported for one sync. */
export function syncOutcome(args: {
  id: string;
  syncCount: number;
  nowMs: number;
  changes: readonly MembershipChange[];
  forgotten: readonly string[];
  queued: number;
  memberCount: number;
}): SyncOutcome {
  const count = (n: MembershipChange['change']) => args.changes.filter((c) => c.change === n).length;
  return {
    id: args.id,
    syncCount: args.syncCount,
    syncedAtMs: args.nowMs,
    added: count('added'),
    removed: count('removed'),
    changed: count('changed'),
    forgotten: args.forgotten.length,
    queued: args.queued,
    memberCount: args.memberCount,
  };
}

/**
 * How many entries of sync history each audience keeps: the newest; older ones are deleted
 * as new ones come. Quiet syncs fold into one entry, so these are mostly syncs that changed
 * something or failed, whatever the sync interval.
 */
export const syncHistoryLimit = 100;

/** An `audience_syncs` row. */
export interface SyncRow {
  id: number;
  audience_id: string;
  started_at: number;
  finished_at: number;
  runs: number;
  sync_count: number | null;
  added: number | null;
  removed: number | null;
  changed: number | null;
  forgotten: number | null;
  queued: number | null;
  member_count: number | null;
  error: string | null;
}

/** An `audience_syncs` row as a record. */
export function toSyncRecord(r: SyncRow): SyncRecord {
  return {
    id: Number(r.id),
    audienceId: r.audience_id,
    startedAtMs: Number(r.started_at),
    finishedAtMs: Number(r.finished_at),
    runs: r.runs,
    syncCount: r.sync_count,
    added: r.added,
    removed: r.removed,
    changed: r.changed,
    forgotten: r.forgotten,
    queued: r.queued,
    memberCount: r.member_count,
    error: r.error,
  };
}

/**
 * The values of an entry, in the column order of `syncColumns`, and whether it is quiet (done
 * with nothing changed), which the newest quiet entry absorbs rather than a new row.
 */
export function syncValues(e: SyncEntry): { quiet: boolean; values: unknown[] } {
  if ('error' in e) {
    return {
      quiet: false,
      values: [e.audienceId, e.startedAtMs, e.finishedAtMs, null, null, null, null, null, null, null, storedText(e.error)],
    };
  }
  const o = e.outcome;
  return {
    quiet: o.added + o.removed + o.changed + o.forgotten === 0,
    values: [e.audienceId, e.startedAtMs, e.finishedAtMs, o.syncCount, o.added, o.removed, o.changed, o.forgotten, o.queued, o.memberCount, null],
  };
}

/** The columns `syncValues` fills, in its order. */
export const syncColumns = 'audience_id, started_at, finished_at, sync_count, added, removed, changed, forgotten, queued, member_count, error';

/**
 * Folds a quiet sync into the audience's newest entry when that entry is quiet too and holds
 * the same member count; parameters: finished_at, sync_count, audience_id, member_count (as `?`).
 */
export const foldQuietSync = `
  UPDATE audience_syncs SET finished_at = ?, sync_count = ?, runs = runs + 1
  WHERE id = (SELECT MAX(id) FROM audience_syncs WHERE audience_id = ?)
    AND error IS NULL AND added = 0 AND removed = 0 AND changed = 0 AND forgotten = 0 AND member_count = ?`;

/** Deletes an audience's entries beyond the newest `syncHistoryLimit`; parameters: audience_id twice (as `?`). */
export const pruneSyncs = `
  DELETE FROM audience_syncs WHERE audience_id = ? AND id <= (
    SELECT id FROM audience_syncs WHERE audience_id = ? ORDER BY id DESC LIMIT 1 OFFSET ${syncHistoryLimit})`;
