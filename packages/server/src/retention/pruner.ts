import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from 'pino';
import { DAY_MS, type RetentionKind, type RetentionSettings } from '../model/retention.js';
import type { CatalogStore } from '../store/catalog-store.js';
import type { RetentionStore } from '../store/retention-store.js';
import { timersOf, type Clock, type TimerHandle } from '../util/clock.js';
import { loadRetention } from './retention-settings.js';

/** Options of {@link RetentionPruner}. */
export interface RetentionPrunerOptions {
  store: Pick<CatalogStore, 'getSetting'> & { retention: RetentionStore };
  /** Time of the cutoffs and of the interval's timer; tests inject a manual clock. */
  clock: Clock;
  logger: Logger;
  /** Time between two runs; default one minute. */
  intervalMs?: number;
  /** The time one batch should take: the longest the event loop or a table's rows wait for it. Default 5 ms. */
  batchTargetMs?: number;
  /** Bounds of a batch's size in rows; default 10 to 5000. */
  minBatchRows?: number;
  maxBatchRows?: number;
  /** Most batches of one kind in one run (the rest waits for the next run); default 10 000. */
  maxBatchesPerKind?: number;
  /** Most time one run spends pruning, in ms of real time; default 30 s. */
  runBudgetMs?: number;
}

/** What one run did. */
export interface PruneRun {
  /** When it started, by the clock. */
  atMs: number;
  /** Rows deleted per kind (attempts not counted). */
  deleted: Record<RetentionKind, number>;
  /** Attempts deleted with the deliveries. */
  attemptsDeleted: number;
  /** Batches run. */
  batches: number;
  /** True when another node was pruning (PostgreSQL), so this one left the run to it. */
  leftToAnotherNode: boolean;
}

const initialBatchRows = 200;

/**
 * Deletes what is past its retention, in the background: every interval, for each kind with a
 * retention (not 0), batches of rows in id order, each sized to take about `batchTargetMs` and
 * followed by a turn of the event loop, so ingestion and delivery wait at most one batch. The
 * retention is read from the store at each run, so a change through the admin API or another
 * node's file applies at the next run everywhere.
 */
export class RetentionPruner {
  private readonly intervalMs: number;
  private readonly batchTargetMs: number;
  private readonly minBatchRows: number;
  private readonly maxBatchRows: number;
  private readonly maxBatchesPerKind: number;
  private readonly runBudgetMs: number;
  private readonly batchRows = new Map<RetentionKind, number>();
  private timer: TimerHandle | undefined;
  private running: Promise<PruneRun> | undefined;
  private stopped = false;
  /** The last run that finished, for metrics; undefined before the first. */
  lastRun: PruneRun | undefined;
  /** Rows deleted per kind since start (attempts under `attempts`), for metrics. */
  readonly deletedTotal: Record<RetentionKind | 'attempts', number> = {
    events: 0,
    delivered: 0,
    deadLetters: 0,
    rejections: 0,
    auditLog: 0,
    attempts: 0,
  };

  constructor(private readonly options: RetentionPrunerOptions) {
    this.intervalMs = options.intervalMs ?? 60_000;
    this.batchTargetMs = options.batchTargetMs ?? 5;
    this.minBatchRows = options.minBatchRows ?? 10;
    this.maxBatchRows = options.maxBatchRows ?? 5000;
    this.maxBatchesPerKind = options.maxBatchesPerKind ?? 10_000;
    this.runBudgetMs = options.runBudgetMs ?? 30_000;
  }

  /** Runs every interval from now on (the first run one interval from now). */
  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** Stops the timer and waits for a run under way to finish its batch. */
  async stop(): Promise<void> {
    this.stopped = true;
    timersOf(this.options.clock).clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => {});
  }

  /** One run now (or the one under way). */
  runOnce(): Promise<PruneRun> {
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = timersOf(this.options.clock).setTimeout(() => {
      this.runOnce()
        .catch((err: unknown) => this.options.logger.warn({ err }, 'pruning failed; it is tried again at the next interval'))
        .finally(() => this.schedule());
    }, this.intervalMs);
  }

  private async run(): Promise<PruneRun> {
    const { store, clock } = this.options;
    const settings: RetentionSettings = await loadRetention(store);
    const atMs = clock.now();
    const report: PruneRun = {
      atMs,
      deleted: { events: 0, delivered: 0, deadLetters: 0, rejections: 0, auditLog: 0 },
      attemptsDeleted: 0,
      batches: 0,
      leftToAnotherNode: false,
    };
    const startedAt = performance.now();
    // Deliveries first: an event goes only once no pending delivery needs it, and dead
    // letters and delivered deliveries are what most of the store holds.
    for (const kind of ['delivered', 'deadLetters', 'events', 'rejections', 'auditLog'] as const satisfies readonly RetentionKind[]) {
      const days = settings[kind];
      if (days <= 0) continue;
      const cutoffMs = atMs - days * DAY_MS;
      let afterId = 0;
      for (let batch = 0; batch < this.maxBatchesPerKind && !this.stopped; batch++) {
        if (performance.now() - startedAt > this.runBudgetMs) break;
        const limit = this.batchRows.get(kind) ?? Math.min(this.maxBatchRows, Math.max(this.minBatchRows, initialBatchRows));
        const t0 = performance.now();
        const result = await store.retention.pruneBatch({ kind, cutoffMs, afterId, limit });
        this.resize(kind, limit, performance.now() - t0);
        if (result.busy) {
          report.leftToAnotherNode = true;
          break;
        }
        report.batches++;
        report.deleted[kind] += result.deleted;
        report.attemptsDeleted += result.attemptsDeleted;
        this.deletedTotal[kind] += result.deleted;
        this.deletedTotal.attempts += result.attemptsDeleted;
        afterId = result.lastId;
        if (result.done) break;
        await nextTurn();
      }
      if (report.leftToAnotherNode) break;
    }
    // Also after a run that deleted nothing: on PostgreSQL without autovacuum the delivery queue
    // and updated deliveries leave dead rows whether or not anything is past its retention.
    if (!report.leftToAnotherNode) await this.reclaim(startedAt);
    this.lastRun = report;
    const total = Object.values(report.deleted).reduce((a, b) => a + b, 0);
    if (total > 0)
      this.options.logger.info({ deleted: report.deleted, attempts: report.attemptsDeleted, batches: report.batches }, 'pruned data past its retention');
    return report;
  }

  /** Frees the space in small steps too: an incremental vacuum of SQLite writes the pages it moves. */
  private async reclaim(startedAt: number): Promise<void> {
    const pagesPerStep = 256;
    for (let step = 0; step < 10_000 && !this.stopped && performance.now() - startedAt <= this.runBudgetMs; step++) {
      if ((await this.options.store.retention.reclaimSpace(pagesPerStep)) === 0) return;
      await nextTurn();
    }
  }

  /** The next batch's size: aimed at the target time, changing by at most a factor of two. */
  private resize(kind: RetentionKind, limit: number, tookMs: number): void {
    const aimed = (limit * this.batchTargetMs) / Math.max(tookMs, 0.05);
    const next = Math.round(Math.min(limit * 2, Math.max(limit / 2, aimed)));
    this.batchRows.set(kind, Math.min(this.maxBatchRows, Math.max(this.minBatchRows, next)));
  }
}
