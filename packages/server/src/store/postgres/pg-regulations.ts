import type pg from 'pg';
import { defaultPurgeBatchSize, LinkedIdentities, type RegulationPlan } from '../../model/regulation-plan.js';
import type { AffectedSources, DeleteNotice, ExecuteRegulationArgs, Regulation, RegulationCursor, RegulationsStore } from '../regulations-store.js';
import { toRegulation, type RegulationRow } from '../rows.js';
import { deleteDeliveries, insertLoose } from './pg-delivery-rows.js';
import { inTransaction } from './pg-pools.js';
import { CoalescedTask } from '../coalesced-task.js';
import { systemClock, timersOf, type Clock } from '../../util/clock.js';

/**
 * Deletion requests on PostgreSQL: the plan, made once under the request's row lock; the
 * purge in batches, each a transaction of its own; the last step; the purged tables vacuumed
 * (at most once per interval, see {@link defaultVacuumIntervalMs}).
 */
export class PgRegulations implements RegulationsStore {
  private readonly vacuum: CoalescedTask;

  constructor(
    private readonly pool: pg.Pool,
    options: { clock?: Clock; vacuumIntervalMs?: number },
  ) {
    this.vacuum = new CoalescedTask({
      // Outside a transaction, as VACUUM must be. Ingestion and delivery go on meanwhile (docs/operations.md#deleted-data).
      run: async () => void (await this.pool.query(`VACUUM ${purgedTables.join(', ')}`)),
      clock: options.clock ?? systemClock,
      timers: timersOf(options.clock ?? systemClock),
      intervalMs: options.vacuumIntervalMs ?? defaultVacuumIntervalMs,
    });
  }

  async createRegulation(args: { id: string; userIds: string[]; sourceIds: string[] | null; nowMs: number }): Promise<Regulation> {
    await this.pool.query(`INSERT INTO regulations (id, user_ids, user_count, source_ids, status, created_at) VALUES ($1, $2, $3, $4, 'pending', $5)`, [
      args.id,
      JSON.stringify(args.userIds),
      args.userIds.length,
      args.sourceIds === null ? null : JSON.stringify(args.sourceIds),
      args.nowMs,
    ]);
    return (await this.getRegulation(args.id))!;
  }

  async getRegulation(id: string): Promise<Regulation | null> {
    const { rows } = await this.pool.query<RegulationRow>(`SELECT * FROM regulations WHERE id = $1`, [id]);
    return rows[0] ? toRegulation(rows[0]) : null;
  }

  async listRegulations(args: { status?: Regulation['status']; after?: RegulationCursor; limit: number }): Promise<Regulation[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (args.status) {
      params.push(args.status);
      where.push(`status = $${params.length}`);
    }
    if (args.after) {
      params.push(args.after.createdAtMs, args.after.id);
      where.push(`(created_at, id) < ($${params.length - 1}, $${params.length})`);
    }
    params.push(args.limit);
    const { rows } = await this.pool.query<RegulationRow>(
      `SELECT * FROM regulations ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map(toRegulation);
  }

  async pendingRegulations(): Promise<Regulation[]> {
    const { rows } = await this.pool.query<RegulationRow>(`SELECT * FROM regulations WHERE status = 'pending' ORDER BY created_at`);
    return rows.map(toRegulation);
  }

  async executeRegulation(args: ExecuteRegulationArgs): Promise<Regulation> {
    const plan = await inTransaction(this.pool, (client) => planOf(client, args.id, args.maxLinkedUsers));
    if (plan !== undefined) {
      const limit = args.batchSize ?? defaultPurgeBatchSize;
      for (const [column, ids] of [
        ['user_id', plan.plan.userIds],
        ['anonymous_id', plan.plan.anonymousIds],
      ] as const)
        for (const id of ids)
          // Each batch commits on its own: its locks are held only that long.
          for (let deleted = limit; deleted === limit;) {
            if (args.signal?.aborted) return (await this.getRegulation(args.id))!;
            deleted = await inTransaction(this.pool, (client) => purgeBatch(client, args.id, plan, column, id, limit));
          }
      await inTransaction(this.pool, (client) => finishRegulation(client, args.id, plan.plan, args.noticesFor, args.nowMs));
    }
    return (await this.getRegulation(args.id))!;
  }

  reclaimDeleted(): Promise<void> {
    return this.vacuum.request();
  }

  /** Gives a vacuum still waiting for its interval up: autovacuum frees the space in time. */
  close(): void {
    this.vacuum.close();
  }
}

/**
 * A vacuum reads every page of six tables not marked all-visible: one per deletion request
 * would be unbounded work for a burst of them. Also how long the bytes of rows deleted can
 * wait for it (besides autovacuum's own runs).
 */
export const defaultVacuumIntervalMs = 10 * 60_000;

/** The tables a deletion request (or a delivered notice) deletes rows from. */
const purgedTables = ['events', 'deliveries', 'attempts', 'delivery_queue', 'audience_members', 'regulations'];

/**
 * The stored plan of a pending regulation, made and stored first if it has none. The row is
 * locked, so two nodes resuming the same request make one plan between them.
 */
async function planOf(
  client: pg.PoolClient,
  id: string,
  maxLinkedUsers: number | undefined,
): Promise<{ plan: RegulationPlan; scope: string[] | null } | undefined> {
  const { rows } = await client.query<RegulationRow>(`SELECT * FROM regulations WHERE id = $1 FOR UPDATE`, [id]);
  const row = rows[0];
  if (!row || row.status !== 'pending') return undefined;
  const scope = row.source_ids === null ? null : (JSON.parse(row.source_ids) as string[]);
  if (row.plan !== null) return { plan: JSON.parse(row.plan) as RegulationPlan, scope };
  const links = new LinkedIdentities(JSON.parse(row.user_ids) as string[], maxLinkedUsers);
  const previous = `(json::jsonb ->> 'previousId')`;
  for (let ids = links.unexplored(); ids.length > 0; ids = links.unexplored()) {
    const found = await client.query<[string, string]>({
      text: `SELECT ${previous}, user_id FROM events WHERE type = 'alias' AND user_id = ANY($1::text[])
             UNION SELECT ${previous}, user_id FROM events WHERE type = 'alias' AND ${previous} = ANY($1::text[])`,
      values: [ids],
      rowMode: 'array',
    });
    links.addAliases(found.rows);
  }
  const userIds = links.userIds();
  const anonymous = await client.query<[string, string]>({
    text: `SELECT DISTINCT user_id, anonymous_id FROM events WHERE user_id = ANY($1::text[]) AND anonymous_id IS NOT NULL`,
    values: [userIds],
    rowMode: 'array',
  });
  links.addAnonymous(anonymous.rows);
  const max = await client.query<{ max: number }>(`SELECT COALESCE(MAX(id), 0)::bigint AS max FROM events`);
  const maxEventId = max.rows[0]!.max;
  const inScope = scope === null ? '' : `AND source_id = ANY($3::text[])`;
  const held = async (sql: string, ids: string[]) =>
    (
      await client.query<[string, string]>({
        text: `${sql} AND id <= $2 ${inScope}`,
        values: scope === null ? [ids, maxEventId] : [ids, maxEventId, scope],
        rowMode: 'array',
      })
    ).rows;
  const byUser = await held(`SELECT DISTINCT source_id, user_id FROM events WHERE user_id = ANY($1::text[])`, userIds);
  const byAnonymous = await held(
    `SELECT DISTINCT source_id, anonymous_id FROM events WHERE anonymous_id = ANY($1::text[]) AND user_id IS NULL`,
    links.anonymousIds(),
  );
  const plan = links.plan(maxEventId, byUser, byAnonymous);
  await client.query(`UPDATE regulations SET plan = $1, linked_identities = $2 WHERE id = $3`, [
    JSON.stringify(plan),
    JSON.stringify(plan.linkedIdentities),
    id,
  ]);
  return { plan, scope };
}

/**
 * Deletes up to `limit` events of one identity (a user id, or an anonymous id on events
 * without one), with their deliveries and attempts, and counts them on the request. Resolves
 * with how many events it deleted: fewer than `limit` when none is left.
 */
async function purgeBatch(
  client: pg.PoolClient,
  id: string,
  { plan, scope }: { plan: RegulationPlan; scope: string[] | null },
  column: 'user_id' | 'anonymous_id',
  identity: string,
  limit: number,
): Promise<number> {
  // Each statement must see what committed before it (see deleteDeliveries), whatever the server's default isolation.
  await client.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
  const only = column === 'anonymous_id' ? 'AND user_id IS NULL' : '';
  const inScope = scope === null ? '' : `AND source_id = ANY($4::text[])`;
  const { rows: events } = await client.query<{ id: number; source_id: string; message_id: string }>(
    `SELECT id, source_id, message_id FROM events WHERE ${column} = $1 ${only} AND id <= $2 ${inScope} LIMIT $3 FOR UPDATE`,
    scope === null ? [identity, plan.maxEventId, limit] : [identity, plan.maxEventId, limit, scope],
  );
  if (events.length === 0) return 0;
  // Deliveries are found by (source, messageId), which an index covers, as events are unique on it.
  const { rows: found } = await client.query<{ ids: number[] | null }>(
    `SELECT array_agg(d.id) AS ids FROM deliveries d JOIN unnest($1::text[], $2::text[]) AS e(s, m) ON d.message_id = e.m AND d.source_id = e.s
     WHERE d.kind = 'event'`,
    [events.map((e) => e.source_id), events.map((e) => e.message_id)],
  );
  const deliveries = found[0]?.ids ?? [];
  await deleteDeliveries(client, deliveries);
  await client.query(`DELETE FROM events WHERE id = ANY($1::bigint[])`, [events.map((e) => e.id)]);
  await client.query(`UPDATE regulations SET events_deleted = events_deleted + $1, deliveries_deleted = deliveries_deleted + $2 WHERE id = $3`, [
    events.length,
    deliveries.length,
    id,
  ]);
  return events.length;
}

/**
 * The last step, in one transaction: the audience deliveries and memberships of the user ids
 * left with no event, the notices, the request marked done with its user ids forgotten.
 */
async function finishRegulation(
  client: pg.PoolClient,
  id: string,
  plan: RegulationPlan,
  noticesFor: (affected: AffectedSources) => DeleteNotice[],
  nowMs: number,
): Promise<void> {
  await client.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
  const { rows } = await client.query<{ status: string }>(`SELECT status FROM regulations WHERE id = $1 FOR UPDATE`, [id]);
  if (rows[0]?.status !== 'pending') return;
  // Audience syncs lock their audience row: taking them all here makes a sync either finish
  // before this step or start after it, never queue an identify for a user just deleted.
  await client.query(`SELECT id FROM audiences ORDER BY id FOR UPDATE`);
  const { rows: gone } = await client.query<{ ids: string[] | null }>(
    `SELECT array_agg(u) AS ids FROM unnest($1::text[]) AS u WHERE NOT EXISTS (SELECT 1 FROM events WHERE user_id = u)`,
    [plan.userIds],
  );
  const users = gone[0]?.ids ?? [];
  const { rows: found } = await client.query<{ ids: number[] | null }>(
    `SELECT array_agg(id) AS ids FROM deliveries WHERE kind = 'audience' AND user_id = ANY($1::text[])`,
    [users],
  );
  const audience = found[0]?.ids ?? [];
  await deleteDeliveries(client, audience);
  await client.query(`DELETE FROM audience_members WHERE audience_id IN (SELECT id FROM audiences) AND user_id = ANY($1::text[])`, [users]);
  const notices = noticesFor(plan.affected);
  if (notices.length > 0)
    await insertLoose(
      client,
      notices.map((n) => ({ destinationId: n.destinationId, sourceId: n.sourceId, kind: 'delete' as const, userId: n.userId, body: n.body })),
      nowMs,
    );
  await client.query(
    `UPDATE regulations SET status = 'done', finished_at = $1, deliveries_deleted = deliveries_deleted + $2, notifications_queued = $3,
       user_ids = '[]', plan = NULL
     WHERE id = $4`,
    [nowMs, audience.length, notices.length, id],
  );
}
