import { randomUUID } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Catalog } from '../routing/catalog.js';
import type { ArchiveFilter, ReplayFilter, ReplayJobKind, ReplayJobRecord, Store } from '../store/store.js';
import { timersOf, type Clock, type TimerHandle } from '../util/clock.js';
import { runArchiveJob } from './archive-replay.js';

/** When a bulk replay runs at once and when as a job, and the size of a job's batches. */
export interface ReplaySettings {
  /** A bulk replay of at most this many dead letters runs at once, in one transaction; a larger one as a job. */
  inlineLimit: number;
  /** Dead letters a job replays per transaction. */
  batchSize: number;
  /** On a shared store, how often a node takes up running jobs it does not run (see `sweepEvery`). */
  sweepMs: number;
  /**
   * Archive replays: events looked at per batch, and the pending deliveries of the destination
   * at which a batch waits for live traffic to drain (see docs/delivery.md, "Replay from the archive").
   */
  archiveBatchSize: number;
  /** How long an archive job held back (backlog, disabled destination) waits before it looks again. */
  archivePollMs: number;
}

/**
 * The defaults: 5,000 dead letters replayed in one statement take well under a second on either
 * store. An archive batch of 500 keeps what a live delivery may wait behind to about two batches.
 */
export const defaultReplaySettings: ReplaySettings = Object.freeze({
  inlineLimit: 5000,
  batchSize: 1000,
  sweepMs: 30_000,
  archiveBatchSize: 500,
  archivePollMs: 1000,
});

/**
 * Carries out replay jobs: bulk replays too large for one transaction, replayed in batches of
 * `batchSize` dead letters in id order, each batch a transaction with the job's progress
 * (`Store.replayJobBatch`), with a turn of the event loop between two, so ingestion and
 * delivery go on meanwhile. Jobs are stored first, so one interrupted by a stop or a crash is
 * carried on at the next start, by whichever node starts (the job row's lock makes nodes take
 * turns). Dead-letter jobs run one at a time, in the order submitted; each archive job runs on
 * its own (see `runArchiveJob`), since it may wait long for its destination's backlog to drain.
 */
export class ReplayJobRunner {
  private queue: Promise<void> = Promise.resolve();
  private readonly stopping = new AbortController();
  /** Jobs this node has queued or is running, so a sweep does not queue one twice. */
  private readonly scheduled = new Set<string>();
  private sweepTimer: TimerHandle | undefined;
  /** Archive jobs running on this node, each its own task. */
  private readonly archiveTasks = new Set<Promise<void>>();
  /** Ends the wait of an archive job that waits (for its backlog, its rate), by job id. */
  private readonly wakers = new Map<string, () => void>();

  constructor(
    private readonly deps: {
      store: Store;
      catalog: Catalog;
      clock: Clock;
      logger: Logger;
      settings: ReplaySettings;
      /** Called after a batch replayed something, so the worker looks at once. */
      onQueued?: () => void;
    },
  ) {}

  /**
   * Stores a job replaying the dead letters of `filter` that were dead-lettered before now
   * (a letter that dies again while the job runs is not taken again), and schedules it.
   *
   * @param total How many dead letters matched (the answer of `countReplayable`).
   */
  async submit(filter: ReplayFilter, total: number): Promise<ReplayJobRecord> {
    const nowMs = this.deps.clock.now();
    // `untilMs` is exclusive: what died at this very millisecond is taken.
    const untilMs = filter.untilMs === undefined ? nowMs + 1 : Math.min(filter.untilMs, nowMs + 1);
    // The destinations that exist are asked again at each batch: one deleted meanwhile is left out.
    const stored: ReplayFilter = { ...filter, untilMs };
    delete stored.destinationIdsIn;
    const job = await this.deps.store.createReplayJob({ id: newJobId(), filter: stored, total, nowMs });
    this.schedule(job.id, job.kind);
    return job;
  }

  /**
   * Stores an archive replay job sending the stored events of `filter` to its destination, and
   * starts it.
   *
   * @param total How many events matched (the answer of `countArchive`).
   */
  async submitArchive(filter: ArchiveFilter, total: number): Promise<ReplayJobRecord> {
    const job = await this.deps.store.createArchiveJob({ id: newJobId(), filter, total, nowMs: this.deps.clock.now() });
    this.schedule(job.id, job.kind);
    return job;
  }

  /**
   * Cancels a running job (either kind): no batch after the one under way, if any. What it
   * replayed stays replayed. Resolves with the job as it stands (a job already over, as it is),
   * or null when there is none.
   */
  async cancel(id: string): Promise<ReplayJobRecord | null> {
    const job = await this.deps.store.cancelReplayJob(id, this.deps.clock.now());
    this.wakers.get(id)?.();
    return job;
  }

  /** Schedules every job left running by an earlier process (or another node that stopped). */
  async resumeRunning(): Promise<void> {
    for (const job of await this.deps.store.runningReplayJobs()) if (!this.scheduled.has(job.id)) this.schedule(job.id, job.kind);
  }

  /**
   * On a shared store, takes up every `intervalMs` the running jobs this node does not run: a
   * job whose node died or was scaled away is carried on by the others, not left running until
   * some node restarts. Two nodes on one job are safe: each batch locks the job and goes on
   * from its stored cursor, and a letter replayed is no longer dead. Until {@link stop}.
   */
  sweepEvery(intervalMs: number): void {
    const timers = timersOf(this.deps.clock);
    const next = (): void => {
      if (this.stopping.signal.aborted) return;
      this.sweepTimer = timers.setTimeout(() => {
        this.resumeRunning()
          .catch((err: unknown) => this.deps.logger.warn({ err }, 'could not look for replay jobs left running; looking again later'))
          .finally(next);
      }, intervalMs);
    };
    next();
  }

  /** Resolves once every job scheduled so far is over (or given up by {@link stop}). */
  async idle(): Promise<void> {
    await this.queue;
    while (this.archiveTasks.size > 0) await Promise.all([...this.archiveTasks]);
  }

  /** Schedules no more batches: the jobs running stop after their batch and stay running, carried on at the next start. */
  async stop(): Promise<void> {
    this.stopping.abort();
    timersOf(this.deps.clock).clearTimeout(this.sweepTimer);
    await this.idle();
  }

  private schedule(id: string, kind: ReplayJobKind): void {
    this.scheduled.add(id);
    if (kind === 'dead_letters') {
      this.queue = this.queue.then(() => this.run(id)).finally(() => this.scheduled.delete(id));
      return;
    }
    const task = this.runArchive(id).finally(() => {
      this.scheduled.delete(id);
      this.wakers.delete(id);
      this.archiveTasks.delete(task);
    });
    this.archiveTasks.add(task);
  }

  private async runArchive(id: string): Promise<void> {
    const { store, catalog, clock, logger, settings } = this.deps;
    try {
      await runArchiveJob(
        { store, catalog, clock, logger, pacing: { batchSize: settings.archiveBatchSize, pollMs: settings.archivePollMs }, onQueued: this.deps.onQueued },
        id,
        this.stopping.signal,
        (wake) => this.wakers.set(id, wake),
      );
    } catch (err) {
      await this.fail(id, err);
    }
  }

  private async run(id: string): Promise<void> {
    const { store, catalog, clock, logger, settings } = this.deps;
    try {
      let replayed: number | undefined;
      for (;;) {
        if (this.stopping.signal.aborted) return;
        const destinationIdsIn = catalog.destinations().map((d) => d.id);
        const job = await store.replayJobBatch({ id, limit: settings.batchSize, nowMs: clock.now(), destinationIdsIn });
        if (job === null) return;
        if (replayed !== undefined && job.replayed > replayed) this.deps.onQueued?.();
        replayed = job.replayed;
        if (job.status !== 'running') {
          if (job.status === 'done') logger.info({ replayJobId: id, replayed: job.replayed, total: job.total }, 'replay job done');
          return;
        }
        await nextTurn();
      }
    } catch (err) {
      await this.fail(id, err);
    }
  }

  private async fail(id: string, err: unknown): Promise<void> {
    const { store, clock, logger } = this.deps;
    logger.error({ err, replayJobId: id }, 'replay job failed; what it replayed stays replayed, and the rest can be replayed by a new request');
    const reason = err instanceof Error ? err.message : String(err);
    await store.failReplayJob(id, reason, clock.now()).catch((markErr: unknown) => {
      logger.warn({ err: markErr, replayJobId: id }, 'the replay job could not be marked failed; it is carried on at the next start');
    });
  }
}

function newJobId(): string {
  return `rpl_${randomUUID().replaceAll('-', '')}`;
}
