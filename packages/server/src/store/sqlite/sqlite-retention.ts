import type Database from 'better-sqlite3';
import { retentionKinds, type RetentionKind } from '../../model/retention.js';
import type { CoalescedTask } from '../coalesced-task.js';
import type { PruneBatchRequest, PruneBatchResult, RetentionStore, StoreRowEstimates } from '../retention-store.js';
import { beforeCutoff, retentionTables } from '../retention-tables.js';
import type { SqliteBacklogCounts } from './sqlite-backlog-counts.js';
import type { SqliteStoreTotals } from './sqlite-store-totals.js';

/** Free pages below which nothing is given back: 4 MB of 4 KB pages. */
const minReclaimPages = 1024;
/** The share of the file that free pages must reach before they are given back. */
const reclaimShare = 0.1;

interface KindStatements {
  scan: Database.Statement;
  remove: Database.Statement;
}

/**
 * Retention on SQLite. A batch runs synchronously in a transaction of its own (a few ms, see
 * retention/pruner.ts), between two turns of the group commit. Freed pages go back to the file
 * system through `PRAGMA incremental_vacuum` on files created with `auto_vacuum = INCREMENTAL`
 * (sqlite-connection.ts); the WAL truncation that follows makes the file shrink.
 */
export class SqliteRetention implements RetentionStore {
  private readonly statements: Record<RetentionKind, KindStatements>;
  private readonly removeAttempts: Database.Statement;
  private readonly batch: (request: PruneBatchRequest) => PruneBatchResult;
  /** A reclaim under way: free pages reached the threshold and are being given back. */
  private reclaiming = false;

  constructor(
    private readonly db: Database.Database,
    private readonly walTruncation: CoalescedTask,
    counts: SqliteBacklogCounts,
    totals: SqliteStoreTotals,
  ) {
    const statements = {} as Record<RetentionKind, KindStatements>;
    for (const kind of retentionKinds) {
      const t = retentionTables[kind];
      statements[kind] = {
        scan: db.prepare(
          `SELECT id, ${t.arrivedColumn} AS arrived FROM ${t.table}
           WHERE id > ? AND id < (SELECT max(id) FROM ${t.table}) ORDER BY id LIMIT ?`,
        ),
        // Deliveries say what they were, for the backlog's counts (a dead letter pruned is one fewer).
        remove: db.prepare(
          `DELETE FROM ${t.table} WHERE id IN (SELECT value FROM json_each(:ids)) AND ${t.eligible} RETURNING id${t.table === 'deliveries' ? ', destination_id, status' : ''}`,
        ),
      };
    }
    this.statements = statements;
    this.removeAttempts = db.prepare(`DELETE FROM attempts WHERE delivery_id IN (SELECT value FROM json_each(?))`);
    this.batch = db.transaction((request: PruneBatchRequest): PruneBatchResult => {
      const s = this.statements[request.kind];
      const rows = s.scan.all(request.afterId, request.limit) as { id: number; arrived: number }[];
      const { candidates, reachedCutoff } = beforeCutoff(rows, request.cutoffMs);
      const lastId = candidates.at(-1)?.id ?? request.afterId;
      const done = reachedCutoff || rows.length < request.limit;
      if (candidates.length === 0) return { deleted: 0, attemptsDeleted: 0, lastId, done, busy: false };
      const deleted = s.remove.all({ ids: JSON.stringify(candidates.map((r) => r.id)), cutoff: request.cutoffMs }) as {
        id: number;
        destination_id?: string;
        status?: string;
      }[];
      if (retentionTables[request.kind].table === 'deliveries') counts.removeRows(deleted as { destination_id: string; status: string }[]);
      else if (retentionTables[request.kind].table === 'events') totals.add('events', -deleted.length);
      const deletedIds = deleted.map((r) => r.id);
      let attemptsDeleted = 0;
      if (retentionTables[request.kind].withAttempts && deletedIds.length > 0) attemptsDeleted = this.removeAttempts.run(JSON.stringify(deletedIds)).changes;
      return { deleted: deletedIds.length, attemptsDeleted, lastId, done, busy: false };
    });
  }

  async pruneBatch(request: PruneBatchRequest): Promise<PruneBatchResult> {
    return this.batch(request);
  }

  async reclaimSpace(maxPages: number): Promise<number> {
    if ((this.db.pragma('auto_vacuum', { simple: true }) as number) !== 2) return 0;
    // Under steady traffic the rows arriving fill the pages a prune freed: giving those back
    // only to grow the file again is work for nothing. What is worth giving back is a large
    // share of the file (a first prune, a shorter retention, less traffic).
    // Once started, it goes on to the last free page, so the file ends as small as it can.
    if (!this.reclaiming) {
      const free = this.db.pragma('freelist_count', { simple: true }) as number;
      const pages = this.db.pragma('page_count', { simple: true }) as number;
      if (free < Math.max(minReclaimPages, pages * reclaimShare)) return 0;
      this.reclaiming = true;
    }
    this.db.pragma(`incremental_vacuum(${Math.max(1, Math.floor(maxPages))})`);
    const left = this.db.pragma('freelist_count', { simple: true }) as number;
    if (left === 0) {
      this.reclaiming = false;
      // The file shrinks at the checkpoint; until then the freed pages are only marked in the WAL.
      this.walTruncation.request().catch(() => {});
    }
    return left;
  }

  async sizeBytes(): Promise<number> {
    const pages = this.db.pragma('page_count', { simple: true }) as number;
    const size = this.db.pragma('page_size', { simple: true }) as number;
    return pages * size;
  }

  async rowEstimates(): Promise<StoreRowEstimates> {
    // max(id) - min(id) + 1 reads two ends of the primary key, not the table: an upper bound
    // (ids skipped by deletions count), exact for a table pruned from its oldest end.
    // Two statements: SQLite seeks an end of the key for a lone min() or max(), but a query
    // asking for both reads the whole table (about 100 ms a million deliveries).
    const estimate = (table: string) => {
      const hi = this.db.prepare(`SELECT max(id) FROM ${table}`).pluck().get() as number | null;
      const lo = this.db.prepare(`SELECT min(id) FROM ${table}`).pluck().get() as number | null;
      return hi === null || lo === null ? 0 : hi - lo + 1;
    };
    return {
      events: estimate('events'),
      deliveries: estimate('deliveries'),
      attempts: estimate('attempts'),
      rejections: estimate('rejections'),
      audit_log: estimate('audit_log'),
    };
  }
}
