import type Database from 'better-sqlite3';
import type { ReplayFilter } from '../delivery-queue.js';
import type {
  ArchiveBatchArgs,
  ArchiveBatchResult,
  ArchiveCountArgs,
  ArchiveFilter,
  ReplayJobBatchArgs,
  ReplayJobCursor,
  ReplayJobRecord,
  ReplayJobsStore,
} from '../replay-jobs-store.js';
import { toReplayJob, type ReplayJobRow } from '../rows.js';
import type { LeaseTable } from './lease-table.js';
import { archiveStep, countArchive } from './sqlite-archive-replay.js';
import { archiveBatchMayRun, archiveProgress, heldBatch, recordedBatch, refusedBatch } from '../archive-batch.js';
import { replay } from './sqlite-dead-letters.js';
import type { SqliteDeliveryRows } from './sqlite-delivery-rows.js';

/** Replay jobs on SQLite: each batch replays its page and records its progress in one transaction. */
export class SqliteReplayJobs implements ReplayJobsStore {
  constructor(
    private readonly db: Database.Database,
    private readonly leases: LeaseTable,
    private readonly deliveries: SqliteDeliveryRows,
  ) {}

  async createArchiveJob(args: { id: string; filter: ArchiveFilter; total: number; nowMs: number }): Promise<ReplayJobRecord> {
    this.db
      .prepare(`INSERT INTO replay_jobs (id, kind, filter, status, total, cursor, cursor_at, created_at) VALUES (?, 'archive', ?, 'running', ?, 0, ?, ?)`)
      .run(args.id, JSON.stringify(args.filter), args.total, args.filter.sinceMs, args.nowMs);
    return this.get(args.id)!;
  }

  async archiveReplayBatch(args: ArchiveBatchArgs): Promise<ArchiveBatchResult> {
    return this.db
      .transaction((): ArchiveBatchResult => {
        const row = this.db.prepare(`SELECT * FROM replay_jobs WHERE id = ?`).get(args.id) as ReplayJobRow | undefined;
        if (!archiveBatchMayRun(row, args.nowMs)) return refusedBatch(row, args.nowMs);
        const step = archiveStep(this.db, this.deliveries, row, args);
        if (step.held) return heldBatch(row);
        const p = archiveProgress(row, step, args.nowMs);
        this.db
          .prepare(
            `UPDATE replay_jobs SET replayed = replayed + ?, skipped = skipped + ?, cursor = ?, cursor_at = ?, status = ?, finished_at = ?, next_batch_at = ? WHERE id = ?`,
          )
          .run(p.queued, p.skipped, p.cursor, p.cursorAtMs, p.status, p.finishedAtMs, p.nextBatchAtMs, args.id);
        return recordedBatch(this.get(args.id), p);
      })
      .immediate();
  }

  async countArchive(args: ArchiveCountArgs): Promise<number> {
    return countArchive(this.db, args);
  }

  async cancelReplayJob(id: string, nowMs: number): Promise<ReplayJobRecord | null> {
    this.db.prepare(`UPDATE replay_jobs SET status = 'cancelled', finished_at = ? WHERE id = ? AND status = 'running'`).run(nowMs, id);
    return this.get(id);
  }

  async createReplayJob(args: { id: string; filter: ReplayFilter; total: number; nowMs: number }): Promise<ReplayJobRecord> {
    this.db
      .prepare(`INSERT INTO replay_jobs (id, filter, status, total, created_at) VALUES (?, ?, 'running', ?, ?)`)
      .run(args.id, JSON.stringify(args.filter), args.total, args.nowMs);
    return this.get(args.id)!;
  }

  async getReplayJob(id: string): Promise<ReplayJobRecord | null> {
    return this.get(id);
  }

  async listReplayJobs(args: { after?: ReplayJobCursor; limit: number }): Promise<ReplayJobRecord[]> {
    const after = args.after ? `WHERE created_at < ? OR (created_at = ? AND id < ?)` : '';
    const params = args.after ? [args.after.createdAtMs, args.after.createdAtMs, args.after.id] : [];
    const rows = this.db.prepare(`SELECT * FROM replay_jobs ${after} ORDER BY created_at DESC, id DESC LIMIT ?`).all(...params, args.limit) as ReplayJobRow[];
    return rows.map(toReplayJob);
  }

  async runningReplayJobs(): Promise<ReplayJobRecord[]> {
    const rows = this.db.prepare(`SELECT * FROM replay_jobs WHERE status = 'running' ORDER BY created_at, id`).all() as ReplayJobRow[];
    return rows.map(toReplayJob);
  }

  async replayJobBatch(args: ReplayJobBatchArgs): Promise<ReplayJobRecord | null> {
    return this.db
      .transaction(() => {
        const row = this.db.prepare(`SELECT * FROM replay_jobs WHERE id = ?`).get(args.id) as ReplayJobRow | undefined;
        if (!row || row.status !== 'running') return row ? toReplayJob(row) : null;
        const job = toReplayJob(row);
        if (job.kind !== 'dead_letters') return job;
        const ids = replay(this.db, this.leases, this.deliveries.counts, { ...job.filter, destinationIdsIn: args.destinationIdsIn }, args.nowMs, {
          afterId: row.cursor,
          limit: args.limit,
        });
        const done = ids.length < args.limit;
        this.db
          .prepare(`UPDATE replay_jobs SET replayed = replayed + ?, cursor = ?, status = ?, finished_at = ? WHERE id = ?`)
          .run(ids.length, ids.length > 0 ? Math.max(...ids) : row.cursor, done ? 'done' : 'running', done ? args.nowMs : null, args.id);
        return this.get(args.id);
      })
      .immediate();
  }

  async failReplayJob(id: string, error: string, nowMs: number): Promise<void> {
    this.db.prepare(`UPDATE replay_jobs SET status = 'failed', error = ?, finished_at = ? WHERE id = ? AND status = 'running'`).run(error, nowMs, id);
  }

  private get(id: string): ReplayJobRecord | null {
    const row = this.db.prepare(`SELECT * FROM replay_jobs WHERE id = ?`).get(id) as ReplayJobRow | undefined;
    return row ? toReplayJob(row) : null;
  }
}
