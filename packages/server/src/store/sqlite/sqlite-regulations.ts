import type Database from 'better-sqlite3';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { defaultPurgeBatchSize, LinkedIdentities, type RegulationPlan } from '../../model/regulation-plan.js';
import type { DeleteNotice, ExecuteRegulationArgs, Regulation, RegulationCursor, RegulationsStore } from '../regulations-store.js';
import { toRegulation, type RegulationRow } from '../rows.js';
import type { CoalescedTask } from '../coalesced-task.js';
import type { SqliteDeliveryRows } from './sqlite-delivery-rows.js';

/**
 * Deletion requests on SQLite: the plan, the purge in batches (each a transaction of its own,
 * with a turn of the event loop between two), the last step, and the WAL truncated after
 * (at most once per interval, see `defaultWalTruncateIntervalMs`).
 */
export class SqliteRegulations implements RegulationsStore {
  constructor(
    private readonly db: Database.Database,
    private readonly deliveries: SqliteDeliveryRows,
    private readonly walTruncation: CoalescedTask,
  ) {}

  async createRegulation(args: { id: string; userIds: string[]; sourceIds: string[] | null; nowMs: number }): Promise<Regulation> {
    this.db
      .prepare(`INSERT INTO regulations (id, user_ids, user_count, source_ids, status, created_at) VALUES (?, ?, ?, ?, 'pending', ?)`)
      .run(args.id, JSON.stringify(args.userIds), args.userIds.length, args.sourceIds === null ? null : JSON.stringify(args.sourceIds), args.nowMs);
    return (await this.getRegulation(args.id))!;
  }

  async getRegulation(id: string): Promise<Regulation | null> {
    const row = this.db.prepare(`SELECT * FROM regulations WHERE id = ?`).get(id) as RegulationRow | undefined;
    return row ? toRegulation(row) : null;
  }

  async listRegulations(args: { status?: Regulation['status']; after?: RegulationCursor; limit: number }): Promise<Regulation[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (args.status) {
      where.push('status = ?');
      params.push(args.status);
    }
    if (args.after) {
      where.push('(created_at < ? OR (created_at = ? AND id < ?))');
      params.push(args.after.createdAtMs, args.after.createdAtMs, args.after.id);
    }
    const rows = this.db
      .prepare(`SELECT * FROM regulations ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY created_at DESC, id DESC LIMIT ?`)
      .all(...params, args.limit) as RegulationRow[];
    return rows.map(toRegulation);
  }

  async pendingRegulations(): Promise<Regulation[]> {
    const rows = this.db.prepare(`SELECT * FROM regulations WHERE status = 'pending' ORDER BY created_at`).all() as RegulationRow[];
    return rows.map(toRegulation);
  }

  async executeRegulation(args: ExecuteRegulationArgs): Promise<Regulation> {
    const plan = this.db.transaction(() => this.planOf(args.id, args.maxLinkedUsers))();
    if (plan !== undefined) {
      const limit = args.batchSize ?? defaultPurgeBatchSize;
      for (const [column, ids] of [
        ['user_id', plan.plan.userIds],
        ['anonymous_id', plan.plan.anonymousIds],
      ] as const)
        for (const id of ids)
          for (let after = 0; after >= 0;) {
            if (args.signal?.aborted) return (await this.getRegulation(args.id))!;
            after = this.db.transaction(() => this.purgeBatch(args.id, plan, column, id, after, limit))();
            // Each batch commits on its own, and ingestion and delivery run between two.
            if (after >= 0) await nextTurn();
          }
      this.db.transaction(() => this.finishRegulation(args.id, plan.plan, args.noticesFor(plan.plan.affected), args.nowMs))();
    }
    return (await this.getRegulation(args.id))!;
  }

  /** The stored plan of a pending regulation, made and stored first if it has none. */
  private planOf(id: string, maxLinkedUsers: number | undefined): { plan: RegulationPlan; scope: string | null } | undefined {
    const row = this.db.prepare(`SELECT * FROM regulations WHERE id = ?`).get(id) as RegulationRow | undefined;
    if (!row || row.status !== 'pending') return undefined;
    if (row.plan !== null) return { plan: JSON.parse(row.plan) as RegulationPlan, scope: row.source_ids };
    const scope = row.source_ids === null ? '' : `AND source_id IN (SELECT value FROM json_each(@scope))`;
    const links = new LinkedIdentities(JSON.parse(row.user_ids) as string[], maxLinkedUsers);
    const aliases = this.db
      .prepare<{ ids: string }, [string, string]>(
        `SELECT json_extract(json, '$.previousId'), user_id FROM events
         WHERE type = 'alias' AND user_id IN (SELECT value FROM json_each(@ids))
         UNION
         SELECT json_extract(json, '$.previousId'), user_id FROM events
         WHERE type = 'alias' AND json_extract(json, '$.previousId') IN (SELECT value FROM json_each(@ids))`,
      )
      .raw();
    for (let ids = links.unexplored(); ids.length > 0; ids = links.unexplored()) links.addAliases(aliases.all({ ids: JSON.stringify(ids) }));
    const userIds = JSON.stringify(links.userIds());
    links.addAnonymous(
      this.db
        .prepare<[string], [string, string]>(
          `SELECT DISTINCT user_id, anonymous_id FROM events WHERE user_id IN (SELECT value FROM json_each(?)) AND anonymous_id IS NOT NULL`,
        )
        .raw()
        .all(userIds),
    );
    const maxEventId = this.db.prepare(`SELECT COALESCE(MAX(id), 0) FROM events`).pluck().get() as number;
    const params = {
      ids: userIds,
      anonymous: JSON.stringify(links.anonymousIds()),
      max: maxEventId,
      ...(row.source_ids === null ? {} : { scope: row.source_ids }),
    };
    const byUser = this.db
      .prepare<typeof params, [string, string]>(
        `SELECT DISTINCT source_id, user_id FROM events WHERE user_id IN (SELECT value FROM json_each(@ids)) AND id <= @max ${scope}`,
      )
      .raw()
      .all(params);
    const byAnonymous = this.db
      .prepare<typeof params, [string, string]>(
        `SELECT DISTINCT source_id, anonymous_id FROM events
         WHERE anonymous_id IN (SELECT value FROM json_each(@anonymous)) AND anonymous_id IS NOT NULL AND user_id IS NULL AND id <= @max ${scope}`,
      )
      .raw()
      .all(params);
    const plan = links.plan(maxEventId, byUser, byAnonymous);
    this.db.prepare(`UPDATE regulations SET plan = ?, linked_identities = ? WHERE id = ?`).run(JSON.stringify(plan), JSON.stringify(plan.linkedIdentities), id);
    return { plan, scope: row.source_ids };
  }

  /**
   * Deletes up to `limit` events of one identity (a user id, or an anonymous id on events
   * without one) after event id `after`, with their deliveries and attempts, and counts them
   * on the request. Returns the last event id deleted, or -1 when none was left.
   */
  private purgeBatch(
    id: string,
    { plan, scope }: { plan: RegulationPlan; scope: string | null },
    column: 'user_id' | 'anonymous_id',
    identity: string,
    after: number,
    limit: number,
  ): number {
    const only = column === 'anonymous_id' ? 'AND user_id IS NULL' : '';
    const inScope = scope === null ? '' : `AND source_id IN (SELECT value FROM json_each(@scope))`;
    const events = this.db
      .prepare<Record<string, unknown>, number>(
        `SELECT id FROM events WHERE ${column} = @identity ${only} AND id > @after AND id <= @max ${inScope} ORDER BY id LIMIT @limit`,
      )
      .pluck()
      .all({ identity, after, max: plan.maxEventId, limit, ...(scope === null ? {} : { scope }) });
    if (events.length === 0) return -1;
    const eventIds = JSON.stringify(events);
    const deliveries = this.db.prepare<[string], number>(`SELECT id FROM deliveries WHERE event_id IN (SELECT value FROM json_each(?))`).pluck().all(eventIds);
    this.deliveries.delete(deliveries);
    const eventsDeleted = this.db.prepare(`DELETE FROM events WHERE id IN (SELECT value FROM json_each(?))`).run(eventIds).changes;
    this.deliveries.totals.add('events', -eventsDeleted);
    this.db
      .prepare(`UPDATE regulations SET events_deleted = events_deleted + ?, deliveries_deleted = deliveries_deleted + ? WHERE id = ?`)
      .run(events.length, deliveries.length, id);
    return events.at(-1)!;
  }

  /**
   * The last step, in one transaction: the audience deliveries and memberships of the user ids
   * left with no event, the notices, the request marked done with its user ids forgotten.
   */
  private finishRegulation(id: string, plan: RegulationPlan, notices: readonly DeleteNotice[], nowMs: number): void {
    const row = this.db.prepare(`SELECT status FROM regulations WHERE id = ?`).get(id) as { status: string } | undefined;
    if (row?.status !== 'pending') return;
    const gone = JSON.stringify(
      this.db
        .prepare<[string], string>(`SELECT value FROM json_each(?) WHERE NOT EXISTS (SELECT 1 FROM events WHERE user_id = value)`)
        .pluck()
        .all(JSON.stringify(plan.userIds)),
    );
    const audience = this.db
      .prepare<[string], number>(`SELECT id FROM deliveries WHERE kind = 'audience' AND user_id IN (SELECT value FROM json_each(?))`)
      .pluck()
      .all(gone);
    this.deliveries.delete(audience);
    this.db.prepare(`DELETE FROM audience_members WHERE audience_id IN (SELECT id FROM audiences) AND user_id IN (SELECT value FROM json_each(?))`).run(gone);
    for (const n of notices)
      this.deliveries.insertLoose({ destinationId: n.destinationId, sourceId: n.sourceId, kind: 'delete', userId: n.userId, body: n.body }, nowMs);
    this.db
      .prepare(
        `UPDATE regulations SET status = 'done', finished_at = ?, deliveries_deleted = deliveries_deleted + ?, notifications_queued = ?,
           user_ids = '[]', plan = NULL
         WHERE id = ?`,
      )
      .run(nowMs, audience.length, notices.length, id);
  }

  reclaimDeleted(): Promise<void> {
    return this.walTruncation.request();
  }
}
