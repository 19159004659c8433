import type pg from 'pg';
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
import { archiveStep, countArchive } from './pg-archive-replay.js';
import { archiveBatchMayRun, archiveProgress, heldBatch, recordedBatch, refusedBatch } from '../archive-batch.js';
import { replay } from './pg-dead-letters.js';
import { inTransaction } from './pg-pools.js';

/**
 * Replay jobs on PostgreSQL: each batch replays its page and records its progress in one
 * transaction, under the job row's lock, so nodes carrying one job on take turns.
 */
export class PgReplayJobs implements ReplayJobsStore {
  constructor(private readonly pool: pg.Pool) {}

  async createReplayJob(args: { id: string; filter: ReplayFilter; total: number; nowMs: number }): Promise<ReplayJobRecord> {
    const { rows } = await this.pool.query<ReplayJobRow>(
      `INSERT INTO replay_jobs (id, filter, status, total, created_at) VALUES ($1, $2, 'running', $3, $4) RETURNING *`,
      [args.id, JSON.stringify(args.filter), args.total, args.nowMs],
    );
    return toReplayJob(rows[0]!);
  }

  async createArchiveJob(args: { id: string; filter: ArchiveFilter; total: number; nowMs: number }): Promise<ReplayJobRecord> {
    const { rows } = await this.pool.query<ReplayJobRow>(
      `INSERT INTO replay_jobs (id, kind, filter, status, total, cursor, cursor_at, created_at) VALUES ($1, 'archive', $2, 'running', $3, 0, $4, $5) RETURNING *`,
      [args.id, JSON.stringify(args.filter), args.total, args.filter.sinceMs, args.nowMs],
    );
    return toReplayJob(rows[0]!);
  }

  async archiveReplayBatch(args: ArchiveBatchArgs): Promise<ArchiveBatchResult> {
    return inTransaction(this.pool, async (client): Promise<ArchiveBatchResult> => {
      const { rows } = await client.query<ReplayJobRow>(`SELECT * FROM replay_jobs WHERE id = $1 FOR UPDATE`, [args.id]);
      const row = rows[0];
      // Under the job's row lock: the nodes that carry one job on share its rate.
      if (!archiveBatchMayRun(row, args.nowMs)) return refusedBatch(row, args.nowMs);
      const step = await archiveStep(client, row, args);
      if (step.held) return heldBatch(row);
      const p = archiveProgress(row, step, args.nowMs);
      const updated = await client.query<ReplayJobRow>(
        `UPDATE replay_jobs SET replayed = replayed + $2, skipped = skipped + $3, cursor = $4, cursor_at = $5, status = $6, finished_at = $7, next_batch_at = $8
         WHERE id = $1 RETURNING *`,
        [args.id, p.queued, p.skipped, p.cursor, p.cursorAtMs, p.status, p.finishedAtMs, p.nextBatchAtMs],
      );
      return recordedBatch(toReplayJob(updated.rows[0]!), p);
    });
  }

  countArchive(args: ArchiveCountArgs): Promise<number> {
    return countArchive(this.pool, args);
  }

  async cancelReplayJob(id: string, nowMs: number): Promise<ReplayJobRecord | null> {
    // Under the row's lock, as a batch takes it: a batch under way commits first, and the next finds the job cancelled.
    const { rows } = await this.pool.query<ReplayJobRow>(
      `WITH c AS (UPDATE replay_jobs SET status = 'cancelled', finished_at = $2 WHERE id = $1 AND status = 'running' RETURNING *)
       SELECT * FROM c UNION ALL SELECT * FROM replay_jobs WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM c)`,
      [id, nowMs],
    );
    return rows[0] ? toReplayJob(rows[0]) : null;
  }

  async getReplayJob(id: string): Promise<ReplayJobRecord | null> {
    const { rows } = await this.pool.query<ReplayJobRow>(`SELECT * FROM replay_jobs WHERE id = $1`, [id]);
    return rows[0] ? toReplayJob(rows[0]) : null;
  }

  async listReplayJobs(args: { after?: ReplayJobCursor; limit: number }): Promise<ReplayJobRecord[]> {
    const { rows } = args.after
      ? await this.pool.query<ReplayJobRow>(`SELECT * FROM replay_jobs WHERE (created_at, id) < ($1, $2) ORDER BY created_at DESC, id DESC LIMIT $3`, [
          args.after.createdAtMs,
          args.after.id,
          args.limit,
        ])
      : await this.pool.query<ReplayJobRow>(`SELECT * FROM replay_jobs ORDER BY created_at DESC, id DESC LIMIT $1`, [args.limit]);
    return rows.map(toReplayJob);
  }

  async runningReplayJobs(): Promise<ReplayJobRecord[]> {
    const { rows } = await this.pool.query<ReplayJobRow>(`SELECT * FROM replay_jobs WHERE status = 'running' ORDER BY created_at, id`);
    return rows.map(toReplayJob);
  }

  async replayJobBatch(args: ReplayJobBatchArgs): Promise<ReplayJobRecord | null> {
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<ReplayJobRow>(`SELECT * FROM replay_jobs WHERE id = $1 FOR UPDATE`, [args.id]);
      const row = rows[0];
      if (!row || row.status !== 'running') return row ? toReplayJob(row) : null;
      const job = toReplayJob(row);
      if (job.kind !== 'dead_letters') return job;
      const { replayed, lastId } = await replay(client, { ...job.filter, destinationIdsIn: args.destinationIdsIn }, args.nowMs, {
        afterId: Number(row.cursor),
        limit: args.limit,
      });
      const done = replayed < args.limit;
      const updated = await client.query<ReplayJobRow>(
        `UPDATE replay_jobs SET replayed = replayed + $2, cursor = $3, status = $4, finished_at = $5 WHERE id = $1 RETURNING *`,
        [args.id, replayed, replayed > 0 ? lastId : row.cursor, done ? 'done' : 'running', done ? args.nowMs : null],
      );
      return toReplayJob(updated.rows[0]!);
    });
  }

  async failReplayJob(id: string, error: string, nowMs: number): Promise<void> {
    await this.pool.query(`UPDATE replay_jobs SET status = 'failed', error = $2, finished_at = $3 WHERE id = $1 AND status = 'running'`, [id, error, nowMs]);
  }
}
