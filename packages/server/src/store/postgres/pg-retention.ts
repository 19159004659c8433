import type pg from 'pg';
import type { PruneBatchRequest, PruneBatchResult, RetentionStore, StoreRowEstimates } from '../retention-store.js';
import { beforeCutoff, retentionTables } from '../retention-tables.js';
import { inTransaction } from './pg-pools.js';

/** Least dead rows in a table before the pruner, where autovacuum does not cover it, vacuums it. */
export const VACUUM_AFTER_ROWS = 1_000;
/**
 * Share of a table's rows dead past which the pruner vacuums it: half of autovacuum's default
 * (`autovacuum_vacuum_scale_factor`, 0.2). Space is reused only after a vacuum, so a table pruned
 * from its old end settles at about this share above its live rows: a tenth keeps the store
 * well within 1.25x of its first retention window (the retention benchmark's goal).
 */
export const VACUUM_SCALE_FACTOR = 0.1;

/**
 * Dead rows after which the pruner vacuums a table of about `rows` rows: a tenth of it, never
 * fewer than {@link VACUUM_AFTER_ROWS}.
 */
export function vacuumThreshold(rows: number): number {
  return Math.max(VACUUM_AFTER_ROWS, Math.round(VACUUM_SCALE_FACTOR * rows));
}

/** What the vacuum rule reads of one table of the schema. */
export interface TableVacuumState {
  table: string;
  /** The planner's estimate of its live rows. */
  rows: number;
  /** Dead rows by PostgreSQL's statistics (0 where `track_counts` is off). */
  deadRows: number;
  /** Whether autovacuum takes care of it: on for the server and not turned off for the table. */
  autovacuum: boolean;
}

/**
 * The tables the pruner vacuums itself: those autovacuum does not cover, whose dead rows grew by
 * {@link vacuumThreshold} since the pruner last vacuumed them. Dead rows count every table of
 * the schema, not only those pruned: the delivery queue loses each row once it is delivered and
 * updated rows leave their old versions, and with nobody vacuuming them those tables grow
 * without end. `deadAfterVacuum` is what a table's last vacuum could not remove (rows an open
 * transaction may still see), so that such rows do not call for a vacuum at every run;
 * `deletedSinceVacuum` is this node's own count of pruned rows, which stands in when the
 * statistics lag or are off.
 */
export function tablesToVacuum(
  tables: readonly TableVacuumState[],
  deadAfterVacuum: ReadonlyMap<string, number>,
  deletedSinceVacuum: ReadonlyMap<string, number>,
): string[] {
  return tables
    .filter((t) => {
      if (t.autovacuum) return false;
      const dead = Math.max(t.deadRows - (deadAfterVacuum.get(t.table) ?? 0), deletedSinceVacuum.get(t.table) ?? 0);
      return dead >= vacuumThreshold(t.rows);
    })
    .map((t) => t.table);
}

/**
 * Retention on PostgreSQL. Each batch is a transaction that first takes the schema's prune
 * lock (`pg_try_advisory_xact_lock`): with several nodes, one prunes at a time and the others,
 * finding it taken, leave the run to it; the lock goes with the transaction, so a node that
 * dies holds nothing. Deleted rows are left to autovacuum, which keeps the tables from growing
 * past their size in steady state; where it is off (for the server or a table), the pruner
 * vacuums a table itself once its dead rows pass {@link vacuumThreshold} (see {@link tablesToVacuum}).
 */
export class PgRetention implements RetentionStore {
  /** Rows this node pruned from each table since it last vacuumed it. */
  private readonly deletedSinceVacuum = new Map<string, number>();
  /** Dead rows each table's statistics counted just after the pruner's last vacuum of it. */
  private readonly deadAfterVacuum = new Map<string, number>();

  constructor(private readonly pool: pg.Pool) {}

  pruneBatch(request: PruneBatchRequest): Promise<PruneBatchResult> {
    const t = retentionTables[request.kind];
    return inTransaction(this.pool, async (client) => {
      const lock = await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || '.ferry_retention')) AS ok`);
      if (!lock.rows[0]?.ok) return { deleted: 0, attemptsDeleted: 0, lastId: request.afterId, done: true, busy: true };
      const { rows } = await client.query<{ id: string; arrived: string }>(
        `SELECT id, ${t.arrivedColumn} AS arrived FROM ${t.table}
         WHERE id > $1 AND id < (SELECT max(id) FROM ${t.table}) ORDER BY id LIMIT $2`,
        [request.afterId, request.limit],
      );
      const scanned = rows.map((r) => ({ id: Number(r.id), arrived: Number(r.arrived) }));
      const { candidates, reachedCutoff } = beforeCutoff(scanned, request.cutoffMs);
      const lastId = candidates.at(-1)?.id ?? request.afterId;
      const done = reachedCutoff || rows.length < request.limit;
      if (candidates.length === 0) return { deleted: 0, attemptsDeleted: 0, lastId, done, busy: false };
      const removed = await client.query<{ id: string }>(
        `DELETE FROM ${t.table} WHERE id = ANY($1::bigint[]) AND ${t.eligible.replaceAll(':cutoff', '$2')} RETURNING id`,
        [candidates.map((r) => r.id), request.cutoffMs],
      );
      let attemptsDeleted = 0;
      if (t.withAttempts && removed.rows.length > 0) {
        const r = await client.query(`DELETE FROM attempts WHERE delivery_id = ANY($1::bigint[])`, [removed.rows.map((r) => r.id)]);
        attemptsDeleted = r.rowCount ?? 0;
        this.count('attempts', attemptsDeleted);
      }
      this.count(t.table, removed.rows.length);
      return { deleted: removed.rows.length, attemptsDeleted, lastId, done, busy: false };
    });
  }

  async reclaimSpace(): Promise<number> {
    const stats = async (table: string) => {
      const { rows } = await this.pool.query<{ dead: string; vacuums: string }>(
        `SELECT n_dead_tup AS dead, vacuum_count AS vacuums FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = $1`,
        [table],
      );
      return { dead: Number(rows[0]?.dead ?? 0), vacuums: Number(rows[0]?.vacuums ?? 0) };
    };
    for (const table of await this.dueForVacuum()) {
      const before = await stats(table);
      await this.pool.query(`VACUUM "${table.replaceAll('"', '""')}"`);
      this.deletedSinceVacuum.set(table, 0);
      // From PostgreSQL 15 a vacuum's report reaches the statistics at once; before, through a
      // collector, a moment later. A reading from before this vacuum would set the baseline to
      // the dead rows it removed, so only one that counts this vacuum is taken; else none.
      const after = await stats(table);
      this.deadAfterVacuum.set(table, after.vacuums > before.vacuums ? after.dead : 0);
    }
    return 0;
  }

  /**
   * The tables the next {@link reclaimSpace} vacuums (see {@link tablesToVacuum}); none while
   * autovacuum covers them all, which does this in its own time and pace.
   */
  async dueForVacuum(): Promise<string[]> {
    return tablesToVacuum(await this.vacuumStates(), this.deadAfterVacuum, this.deletedSinceVacuum);
  }

  /** Every table of the schema as the vacuum rule reads it, from the catalog and the statistics. */
  private async vacuumStates(): Promise<TableVacuumState[]> {
    const { rows } = await this.pool.query<{ table: string; rows: number; dead: string; autovacuum: boolean }>(
      `SELECT c.relname AS table, GREATEST(c.reltuples, 0)::float8 AS rows, COALESCE(s.n_dead_tup, 0) AS dead,
              -- Autovacuum needs the statistics (track_counts) as well as its own switch.
              current_setting('autovacuum')::boolean AND current_setting('track_counts')::boolean
                AND COALESCE((SELECT o.option_value::boolean FROM pg_options_to_table(c.reloptions) o WHERE o.option_name = 'autovacuum_enabled'), true)
                AS autovacuum
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
       WHERE n.nspname = current_schema() AND c.relkind = 'r'`,
    );
    return rows.map((r) => ({ table: r.table, rows: Math.round(r.rows), deadRows: Number(r.dead), autovacuum: r.autovacuum }));
  }

  async sizeBytes(): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint AS n
       FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
       WHERE s.nspname = current_schema() AND c.relkind = 'r'`,
    );
    return Number(rows[0]?.n ?? 0);
  }

  async rowEstimates(): Promise<StoreRowEstimates> {
    // The planner's estimate, kept by (auto)vacuum and analyze: no table is read.
    const { rows } = await this.pool.query<{ relname: string; n: number }>(
      `SELECT c.relname, GREATEST(c.reltuples, 0)::float8 AS n
       FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
       WHERE s.nspname = current_schema() AND c.relname = ANY($1)`,
      [['events', 'deliveries', 'attempts', 'rejections', 'audit_log']],
    );
    const of = (name: string) => Math.round(rows.find((r) => r.relname === name)?.n ?? 0);
    return { events: of('events'), deliveries: of('deliveries'), attempts: of('attempts'), rejections: of('rejections'), audit_log: of('audit_log') };
  }

  private count(table: string, n: number): void {
    this.deletedSinceVacuum.set(table, (this.deletedSinceVacuum.get(table) ?? 0) + n);
  }
}
