import type pg from 'pg';
import type { PruneBatchRequest, PruneBatchResult, RetentionStore, StoreRowEstimates } from '../retention-store.js';
import { beforeCutoff, retentionTables } from '../retention-tables.js';
import { inTransaction } from './pg-pools.js';

/** Least rows deleted from a table since its last vacuum by this node before, where autovacuum does not run, the pruner vacuums it. */
export const VACUUM_AFTER_ROWS = 1_000;
/** Share of a table's rows deleted past which the pruner vacuums it: autovacuum's own default rule (`autovacuum_vacuum_scale_factor`). */
export const VACUUM_SCALE_FACTOR = 0.2;

/**
 * Deletions after which the pruner vacuums a table of about `rows` rows: a fifth of it, as
 * autovacuum would, so the space a steady load frees is reused before the table grows much
 * past one retention window; never fewer than {@link VACUUM_AFTER_ROWS}.
 */
export function vacuumThreshold(rows: number): number {
  return Math.max(VACUUM_AFTER_ROWS, Math.round(VACUUM_SCALE_FACTOR * rows));
}

/**
 * Retention on PostgreSQL. Each batch is a transaction that first takes the schema's prune
 * lock (`pg_try_advisory_xact_lock`): with several nodes, one prunes at a time and the others,
 * finding it taken, leave the run to it; the lock goes with the transaction, so a node that
 * dies holds nothing. Deleted rows are left to autovacuum, which keeps the tables from growing
 * past their size in steady state; on a table it does not visit (off for the server, or for the
 * table by its `autovacuum_enabled` storage parameter), the pruner vacuums it itself once its
 * deletions pass {@link vacuumThreshold}.
 */
export class PgRetention implements RetentionStore {
  private readonly deletedSinceVacuum = new Map<string, number>();

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
    const due = await this.dueForVacuum();
    if (due.length === 0) return 0;
    const autovacuumed = await this.autovacuumed(due);
    for (const table of due) {
      // Autovacuum, where it runs, does this in its own time and pace.
      if (!autovacuumed.has(table)) await this.pool.query(`VACUUM ${table}`);
      this.deletedSinceVacuum.set(table, 0);
    }
    return 0;
  }

  /**
   * Which of `tables` autovacuum visits: none when the server's `autovacuum` is off, else those
   * whose own `autovacuum_enabled` storage parameter is not false (`ALTER TABLE ... SET`).
   */
  private async autovacuumed(tables: string[]): Promise<Set<string>> {
    const { rows } = await this.pool.query<{ relname: string }>(
      `SELECT c.relname FROM pg_class c
       WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY($1) AND current_setting('autovacuum')::boolean
         AND COALESCE((SELECT o.option_value::boolean FROM pg_options_to_table(c.reloptions) o WHERE o.option_name = 'autovacuum_enabled'), true)`,
      [tables],
    );
    return new Set(rows.map((r) => r.relname));
  }

  /**
   * The tables this node pruned past {@link vacuumThreshold} of their estimated rows since it
   * last vacuumed them (or left them to autovacuum): those the next {@link reclaimSpace} takes.
   * The decision is the same whether autovacuum is on or off; only who vacuums differs.
   */
  async dueForVacuum(): Promise<string[]> {
    if (![...this.deletedSinceVacuum.values()].some((n) => n >= VACUUM_AFTER_ROWS)) return [];
    const sizes = await this.rowEstimates();
    return [...this.deletedSinceVacuum].filter(([table, n]) => n >= vacuumThreshold(sizes[table as keyof StoreRowEstimates] ?? 0)).map(([table]) => table);
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
