import type pg from 'pg';
import type { AudienceDefinition, AudienceKind, AudienceRecord, MembershipChange, SyncEntry, SyncOutcome, SyncRecord } from '../../model/audience.js';
import type { AudienceMember, AudienceStore } from '../audience-store.js';
import type { NewDelivery } from '../delivery-queue.js';
import { insertLoose } from './pg-delivery-rows.js';
import { inTransaction } from './pg-pools.js';
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

/** A statement written with `?` placeholders, numbered for PostgreSQL (`$1`, `$2`...). */
const numbered = (sql: string): string => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

/*
 * PostgreSQL's jsonb refuses `\u0000` and lone surrogate escapes, which the stored JSON
 * (JSON.stringify output) holds for such strings. One event carrying them anywhere would
 * make every trait sync fail until it is deleted, so those escapes are rewritten to U+FFFD
 * before the cast, on both sides of the comparison. Escaped backslashes are set aside
 * first (as \x01, which JSON.stringify never writes raw) so `\\u0000`, the text "\u0000",
 * is left alone. Cost: on PostgreSQL a trait value holding NUL or a lone surrogate equals
 * the same value with U+FFFD in their place.
 */
const unsafeEscape = String.raw`\\u(0000|[dD][89a-fA-F][0-9a-fA-F]{2})`;
const jsonbSafe = (column: string) =>
  String.raw`(CASE WHEN ${column} ~ '${unsafeEscape}'
    THEN replace(regexp_replace(replace(${column}, '\\', chr(1)), '${unsafeEscape}', '\\ufffd', 'g'), chr(1), '\\')
    ELSE ${column} END)::jsonb`;

/** The same rewrite as {@link jsonbSafe}, for JSON text bound as a parameter. */
function toJsonbSafe(json: string): string {
  return json
    .replaceAll('\\\\', '\x01')
    .replace(/\\u(0000|[dD][89a-fA-F][0-9a-fA-F]{2})/g, '\\ufffd')
    .replaceAll('\x01', '\\\\');
}

/**
 * The users who qualify now and the value each should hold, as JSON text (what
 * `audience_members.value` stores, so the diff is a string comparison). Same semantics as
 * the SQLite store's query, in PostgreSQL's dialect.
 */
async function currentValues(client: pg.PoolClient, audience: Pick<AudienceDefinition, 'rule' | 'sourceIds'>, nowMs: number): Promise<Map<string, string>> {
  const params: unknown[] = [];
  const param = (value: unknown, type = '') => {
    params.push(value);
    return `$${params.length}${type}`;
  };
  const sourceClause = audience.sourceIds === null ? '' : `AND e.source_id = ANY(${param(audience.sourceIds, '::text[]')})`;
  const rule = audience.rule;
  const out = new Map<string, string>();
  switch (rule.type) {
    case 'event':
    case 'event_count': {
      const windowClause = rule.withinDays === undefined ? '' : `AND e.received_at >= ${param(nowMs - rule.withinDays * dayMs, '::bigint')}`;
      const having = rule.type === 'event' ? `HAVING COUNT(*) >= ${param(rule.minCount, '::bigint')}` : '';
      const { rows } = await client.query<{ user_id: string; n: number }>(
        `SELECT e.user_id, COUNT(*) AS n FROM events e
         WHERE e.type = 'track' AND e.event = ${param(rule.event, '::text')} AND e.user_id IS NOT NULL ${windowClause} ${sourceClause}
         GROUP BY e.user_id ${having}`,
        params,
      );
      for (const r of rows) out.set(r.user_id, rule.type === 'event' ? 'true' : JSON.stringify(r.n));
      return out;
    }
    case 'trait': {
      // The latest identify that carries the trait decides, as in a merged profile: an
      // identify that leaves the trait out does not unset it; one that sends null does
      // (`->` gives SQL NULL for a missing key, jsonb 'null' for a null value). jsonb
      // equality compares types too, and numbers by value, like the SQLite query.
      const { rows } = await client.query<{ user_id: string }>(
        `WITH carried AS (
           SELECT e.id, e.user_id, e.received_at, ${jsonbSafe('e.json')} -> 'traits' -> ${param(rule.trait, '::text')} AS v
           FROM events e
           WHERE e.type = 'identify' AND e.user_id IS NOT NULL ${sourceClause}),
         latest AS (
           SELECT DISTINCT ON (user_id) user_id, v FROM carried WHERE v IS NOT NULL
           ORDER BY user_id, received_at DESC, id DESC)
         SELECT user_id FROM latest WHERE v = ${param(toJsonbSafe(JSON.stringify(rule.equals)), '::jsonb')}`,
        params,
      );
      for (const r of rows) out.set(r.user_id, 'true');
      return out;
    }
  }
}

/**
 * Audiences on the store's database: each sync runs on one connection in one transaction with
 * its delivery jobs, and starts by locking the audience row, so two nodes syncing one audience
 * take turns and the second diffs against what the first committed.
 */
export class PgAudienceStore implements AudienceStore {
  constructor(private readonly pool: pg.Pool) {}

  async create(definition: AudienceDefinition, nowMs: number): Promise<boolean> {
    const config = storedConfig(definition);
    return inTransaction(this.pool, async (client) => {
      const result = await client.query(`INSERT INTO audiences (id, kind, name, config, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`, [
        definition.id,
        definition.kind,
        definition.name,
        JSON.stringify(config),
        nowMs,
      ]);
      return result.rowCount === 1;
    });
  }

  async get(id: string): Promise<AudienceRecord | null> {
    return inTransaction(this.pool, (client) => getAudience(client, id));
  }

  async list(kind: AudienceKind): Promise<AudienceRecord[]> {
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<AudienceRow>(`${selectAudience} WHERE a.kind = $1 ORDER BY a.id`, [kind]);
      return rows.map(toRecord);
    });
  }

  async update(definition: AudienceDefinition): Promise<boolean> {
    // Not while a sync of it runs: the row lock makes this wait for its commit, so the next
    // sync is the first to see the new rule.
    const result = await this.pool.query(`UPDATE audiences SET name = $1, config = $2 WHERE id = $3 AND kind = $4`, [
      definition.name,
      JSON.stringify(storedConfig(definition)),
      definition.id,
      definition.kind,
    ]);
    return result.rowCount === 1;
  }

  async members(id: string, args: { afterUserId?: string; limit: number }): Promise<AudienceMember[]> {
    const after = args.afterUserId === undefined ? '' : 'AND user_id > $3';
    const params: unknown[] = [id, args.limit, ...(args.afterUserId === undefined ? [] : [args.afterUserId])];
    const { rows } = await this.pool.query<{ user_id: string; value: string }>(
      `SELECT user_id, value FROM audience_members WHERE audience_id = $1 ${after} ORDER BY user_id LIMIT $2`,
      params,
    );
    return rows.map(toMember);
  }

  async countQualifying(definition: Pick<AudienceDefinition, 'rule' | 'sourceIds'>, nowMs: number): Promise<number> {
    return inTransaction(this.pool, async (client) => (await currentValues(client, definition, nowMs)).size);
  }

  async delete(id: string): Promise<boolean> {
    return inTransaction(this.pool, async (client) => {
      // The audience row first: it waits for a sync holding the row lock, so the members
      // that sync commits are deleted below instead of outliving their audience.
      const deleted = (await client.query(`DELETE FROM audiences WHERE id = $1`, [id])).rowCount === 1;
      await client.query(`DELETE FROM audience_members WHERE audience_id = $1`, [id]);
      await client.query(`DELETE FROM audience_syncs WHERE audience_id = $1`, [id]);
      return deleted;
    });
  }

  async recordSync(entry: SyncEntry): Promise<void> {
    const { quiet, values } = syncValues(entry);
    await inTransaction(this.pool, async (client) => {
      // Holds off a delete of the audience until the entry is in, so that the delete takes it
      // too; an audience deleted while its sync ran keeps no history.
      const { rowCount } = await client.query(`SELECT 1 FROM audiences WHERE id = $1 FOR KEY SHARE`, [entry.audienceId]);
      if (rowCount !== 1) return;
      if (quiet && 'outcome' in entry) {
        const o = entry.outcome;
        const folded = await client.query(numbered(foldQuietSync), [entry.finishedAtMs, o.syncCount, entry.audienceId, o.memberCount]);
        if (folded.rowCount === 1) return;
      }
      await client.query(`INSERT INTO audience_syncs (${syncColumns}) VALUES (${values.map((_, i) => `$${i + 1}`).join(', ')})`, values);
      await client.query(numbered(pruneSyncs), [entry.audienceId, entry.audienceId]);
    });
  }

  async syncs(id: string, args: { beforeId?: number; limit: number }): Promise<SyncRecord[]> {
    const before = args.beforeId === undefined ? '' : 'AND id < $3';
    const params: unknown[] = [id, args.limit, ...(args.beforeId === undefined ? [] : [args.beforeId])];
    const { rows } = await this.pool.query<SyncRow>(`SELECT * FROM audience_syncs WHERE audience_id = $1 ${before} ORDER BY id DESC LIMIT $2`, params);
    return rows.map(toSyncRecord);
  }

  async sync(args: {
    id: string;
    nowMs: number;
    deliveriesFor: (audience: AudienceRecord, changes: readonly MembershipChange[], syncCount: number) => NewDelivery[];
  }): Promise<SyncOutcome | null> {
    return inTransaction(this.pool, async (client) => {
      // Another node syncing this audience holds the lock until it commits; READ COMMITTED
      // then gives every later statement here a snapshot that includes its members.
      const locked = await client.query(`SELECT id FROM audiences WHERE id = $1 FOR UPDATE`, [args.id]);
      if (locked.rowCount !== 1) return null;
      const audience = (await getAudience(client, args.id))!;
      const current = await currentValues(client, audience, args.nowMs);
      const storedRows = await client.query<{ user_id: string; value: string }>(`SELECT user_id, value FROM audience_members WHERE audience_id = $1`, [
        args.id,
      ]);
      const stored = new Map(storedRows.rows.map((r) => [r.user_id, r.value]));
      const diff = diffMembers(current, stored);
      const withEvents = new Set(
        diff.left.length === 0
          ? []
          : (
              await client.query<{ user_id: string }>(
                `SELECT u AS user_id FROM unnest($1::text[]) AS u WHERE EXISTS (SELECT 1 FROM events WHERE user_id = u)`,
                [diff.left],
              )
            ).rows.map((r) => r.user_id),
      );
      const { changes, forgotten } = settleLeavers(diff.changes, diff.left, withEvents, audience.kind);

      const syncCount = audience.syncCount + 1;
      const deliveries = changes.length === 0 ? [] : args.deliveriesFor(audience, changes, syncCount);
      if (deliveries.length > 0) await insertLoose(client, deliveries, args.nowMs);

      const upserts = changes.filter((c) => c.change !== 'removed');
      if (upserts.length > 0)
        await client.query(
          `INSERT INTO audience_members (audience_id, user_id, value)
           SELECT $1, u, v FROM unnest($2::text[], $3::text[]) AS x(u, v)
           ON CONFLICT (audience_id, user_id) DO UPDATE SET value = excluded.value`,
          [args.id, upserts.map((c) => c.userId), upserts.map((c) => current.get(c.userId)!)],
        );
      const removed = [...changes.filter((c) => c.change === 'removed').map((c) => c.userId), ...forgotten];
      if (removed.length > 0) await client.query(`DELETE FROM audience_members WHERE audience_id = $1 AND user_id = ANY($2::text[])`, [args.id, removed]);
      await client.query(`UPDATE audiences SET sync_count = $1, last_synced_at = $2 WHERE id = $3`, [syncCount, args.nowMs, args.id]);
      return syncOutcome({ id: args.id, syncCount, nowMs: args.nowMs, changes, forgotten, queued: deliveries.length, memberCount: current.size });
    });
  }
}

async function getAudience(client: pg.PoolClient, id: string): Promise<AudienceRecord | null> {
  const { rows } = await client.query<AudienceRow>(`${selectAudience} WHERE a.id = $1`, [id]);
  return rows[0] ? toRecord(rows[0]) : null;
}
