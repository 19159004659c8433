import type Database from 'better-sqlite3';
import type {
  AudienceDefinition,
  AudienceKind,
  AudienceRecord,
  MembershipChange,
  SyncEntry,
  SyncOutcome,
  SyncRecord,
  TraitScalar,
} from '../../model/audience.js';
import type { AudienceMember, AudienceStore } from '../audience-store.js';
import type { NewDelivery } from '../delivery-queue.js';
import type { SqliteDeliveryRows } from './sqlite-delivery-rows.js';
import {
  dayMs,
  diffMembers,
  foldQuietSync,
  pruneSyncs,
  selectAudience,
  settleLeavers,
  storedConfig,
  syncColumns,
  syncOutcome,
  syncValues,
  toMember,
  toRecord,
  toSyncRecord,
  type AudienceRow,
  type SyncRow,
} from '../audience-rows.js';

/**
 * How json_each reports a trait's JSON type, and the SQL value to compare with. Types are
 * matched as well as values because SQLite reports `true` as 1 and `"1"` as '1'.
 */
function traitMatch(equals: TraitScalar): { clause: string; params: unknown[] } {
  if (equals === null) return { clause: `jtype = 'null'`, params: [] };
  if (typeof equals === 'boolean') return { clause: `jtype = ?`, params: [equals ? 'true' : 'false'] };
  if (typeof equals === 'number') return { clause: `jtype IN ('integer', 'real') AND jvalue = ?`, params: [equals] };
  return { clause: `jtype = 'text' AND jvalue = ?`, params: [equals] };
}

/**
 * The users who qualify now and the value each should hold, as JSON text (what
 * `audience_members.value` stores, so the diff is a string comparison).
 */
function currentValues(db: Database.Database, audience: Pick<AudienceDefinition, 'rule' | 'sourceIds'>, nowMs: number): Map<string, string> {
  const sourceClause = audience.sourceIds === null ? '' : `AND e.source_id IN (SELECT value FROM json_each(?))`;
  const sourceParams = audience.sourceIds === null ? [] : [JSON.stringify(audience.sourceIds)];
  const rule = audience.rule;
  const out = new Map<string, string>();
  switch (rule.type) {
    case 'event':
    case 'event_count': {
      const windowClause = rule.withinDays === undefined ? '' : `AND e.received_at >= ?`;
      const windowParams = rule.withinDays === undefined ? [] : [nowMs - rule.withinDays * dayMs];
      const having = rule.type === 'event' ? `HAVING COUNT(*) >= ?` : '';
      const havingParams = rule.type === 'event' ? [rule.minCount] : [];
      const rows = db
        .prepare(
          `SELECT e.user_id AS user_id, COUNT(*) AS n FROM events e
           WHERE e.type = 'track' AND e.event = ? AND e.user_id IS NOT NULL ${windowClause} ${sourceClause}
           GROUP BY e.user_id ${having}`,
        )
        .all(rule.event, ...windowParams, ...sourceParams, ...havingParams) as { user_id: string; n: number }[];
      for (const r of rows) out.set(r.user_id, rule.type === 'event' ? 'true' : JSON.stringify(r.n));
      return out;
    }
    case 'trait': {
      // The latest identify that carries the trait decides, as in a merged profile: an
      // identify that leaves the trait out does not unset it; one that sends null does.
      const match = traitMatch(rule.equals);
      const rows = db
        .prepare(
          `WITH latest AS (
             SELECT e.user_id AS user_id, t.type AS jtype, t.value AS jvalue,
                    ROW_NUMBER() OVER (PARTITION BY e.user_id ORDER BY e.received_at DESC, e.id DESC) AS rn
             FROM events e, json_each(e.json, '$.traits') t
             WHERE e.type = 'identify' AND e.user_id IS NOT NULL AND t.key = ? ${sourceClause})
           SELECT user_id FROM latest WHERE rn = 1 AND ${match.clause}`,
        )
        .all(rule.trait, ...sourceParams, ...match.params) as { user_id: string }[];
      for (const r of rows) out.set(r.user_id, 'true');
      return out;
    }
  }
}

/**
 * Audiences on the SQLite file of the store: same connection, so a sync's member updates and
 * its delivery jobs commit in one transaction.
 */
export class SqliteAudienceStore implements AudienceStore {
  constructor(
    private readonly db: Database.Database,
    private readonly deliveries: SqliteDeliveryRows,
  ) {}

  async create(definition: AudienceDefinition, nowMs: number): Promise<boolean> {
    const config = storedConfig(definition);
    const result = this.db
      .prepare(`INSERT INTO audiences (id, kind, name, config, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`)
      .run(definition.id, definition.kind, definition.name, JSON.stringify(config), nowMs);
    return result.changes === 1;
  }

  async get(id: string): Promise<AudienceRecord | null> {
    return this.getSync(id);
  }

  private getSync(id: string): AudienceRecord | null {
    const row = this.db.prepare(`${selectAudience} WHERE a.id = ?`).get(id) as AudienceRow | undefined;
    return row ? toRecord(row) : null;
  }

  async list(kind: AudienceKind): Promise<AudienceRecord[]> {
    const rows = this.db.prepare(`${selectAudience} WHERE a.kind = ? ORDER BY a.id`).all(kind) as AudienceRow[];
    return rows.map(toRecord);
  }

  async update(definition: AudienceDefinition): Promise<boolean> {
    const result = this.db
      .prepare(`UPDATE audiences SET name = ?, config = ? WHERE id = ? AND kind = ?`)
      .run(definition.name, JSON.stringify(storedConfig(definition)), definition.id, definition.kind);
    return result.changes === 1;
  }

  async members(id: string, args: { afterUserId?: string; limit: number }): Promise<AudienceMember[]> {
    const after = args.afterUserId === undefined ? '' : 'AND user_id > ?';
    const params = args.afterUserId === undefined ? [] : [args.afterUserId];
    const rows = this.db
      .prepare(`SELECT user_id, value FROM audience_members WHERE audience_id = ? ${after} ORDER BY user_id LIMIT ?`)
      .all(id, ...params, args.limit) as { user_id: string; value: string }[];
    return rows.map(toMember);
  }

  async countQualifying(definition: Pick<AudienceDefinition, 'rule' | 'sourceIds'>, nowMs: number): Promise<number> {
    return currentValues(this.db, definition, nowMs).size;
  }

  async delete(id: string): Promise<boolean> {
    return this.db.transaction(() => {
      this.db.prepare(`DELETE FROM audience_members WHERE audience_id = ?`).run(id);
      this.db.prepare(`DELETE FROM audience_syncs WHERE audience_id = ?`).run(id);
      return this.db.prepare(`DELETE FROM audiences WHERE id = ?`).run(id).changes === 1;
    })();
  }

  async recordSync(entry: SyncEntry): Promise<void> {
    const { quiet, values } = syncValues(entry);
    this.db
      .transaction(() => {
        if (quiet && 'outcome' in entry) {
          const o = entry.outcome;
          if (this.db.prepare(foldQuietSync).run(entry.finishedAtMs, o.syncCount, entry.audienceId, o.memberCount).changes === 1) return;
        }
        // Only for an audience that still exists: one deleted while its sync ran keeps no history.
        const inserted = this.db
          .prepare(`INSERT INTO audience_syncs (${syncColumns}) SELECT ${values.map(() => '?').join(', ')} WHERE EXISTS (SELECT 1 FROM audiences WHERE id = ?)`)
          .run(...values, entry.audienceId);
        if (inserted.changes === 1) this.db.prepare(pruneSyncs).run(entry.audienceId, entry.audienceId);
      })
      .immediate();
  }

  async syncs(id: string, args: { beforeId?: number; limit: number }): Promise<SyncRecord[]> {
    const before = args.beforeId === undefined ? '' : 'AND id < ?';
    const params = args.beforeId === undefined ? [] : [args.beforeId];
    const rows = this.db
      .prepare(`SELECT * FROM audience_syncs WHERE audience_id = ? ${before} ORDER BY id DESC LIMIT ?`)
      .all(id, ...params, args.limit) as SyncRow[];
    return rows.map(toSyncRecord);
  }

  async sync(args: {
    id: string;
    nowMs: number;
    deliveriesFor: (audience: AudienceRecord, changes: readonly MembershipChange[], syncCount: number) => NewDelivery[];
  }): Promise<SyncOutcome | null> {
    const run = this.db.transaction((): SyncOutcome | null => {
      const audience = this.getSync(args.id);
      if (!audience) return null;
      const current = currentValues(this.db, audience, args.nowMs);
      const stored = new Map(
        (
          this.db.prepare(`SELECT user_id, value FROM audience_members WHERE audience_id = ?`).all(args.id) as {
            user_id: string;
            value: string;
          }[]
        ).map((r) => [r.user_id, r.value]),
      );
      const diff = diffMembers(current, stored);
      const hasEvents = this.db.prepare(`SELECT 1 FROM events WHERE user_id = ? LIMIT 1`).pluck();
      const { changes, forgotten } = settleLeavers(diff.changes, diff.left, new Set(diff.left.filter((u) => hasEvents.get(u) !== undefined)), audience.kind);

      const syncCount = audience.syncCount + 1;
      const deliveries = changes.length === 0 ? [] : args.deliveriesFor(audience, changes, syncCount);
      for (const d of deliveries) this.deliveries.insertLoose(d, args.nowMs);

      const upsert = this.db.prepare(
        `INSERT INTO audience_members (audience_id, user_id, value) VALUES (?, ?, ?)
         ON CONFLICT (audience_id, user_id) DO UPDATE SET value = excluded.value`,
      );
      const remove = this.db.prepare(`DELETE FROM audience_members WHERE audience_id = ? AND user_id = ?`);
      for (const c of changes) {
        if (c.change === 'removed') remove.run(args.id, c.userId);
        else upsert.run(args.id, c.userId, current.get(c.userId)!);
      }
      for (const userId of forgotten) remove.run(args.id, userId);
      this.db.prepare(`UPDATE audiences SET sync_count = ?, last_synced_at = ? WHERE id = ?`).run(syncCount, args.nowMs, args.id);
      return syncOutcome({ id: args.id, syncCount, nowMs: args.nowMs, changes, forgotten, queued: deliveries.length, memberCount: current.size });
    });
    // IMMEDIATE takes the write lock before reading, so the membership read cannot go stale
    // before the write (another process on the same file would otherwise race it).
    return run.immediate();
  }
}
