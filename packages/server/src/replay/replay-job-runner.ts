import { randomUUID } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Catalog } from '../routing/catalog.js';
import type { ReplayFilter, ReplayJobRecord, Store } from '../store/store.js';
import { timersOf, type Clock, type TimerHandle } from '../util/clock.js';

/** When a bulk replay runs at once and when as a job, and the size of a job's batches. */
export interface ReplaySettings {
  /** A bulk replay of at most this many dead letters runs at once, in one transaction; a larger one as a job. */
  inlineLimit: number;
  /** Dead letters a job replays per transaction. */
  batchSize: number;
  /** On a shared store, how often a node takes up running jobs it does not run (see `sweepEvery`). */
  sweepMs: number;
}

/** The defaults: 5,000 dead letters replayed in one statement take well under a second on either store. */
export const defaultReplaySettings: ReplaySettings = Object.freeze({ inlineLimit: 5000, batchSize: 1000, sweepMs: 30_000 });

/**
 * Carries out replay jobs: bulk replays too large for one transaction, replayed in batches of
 * `batchSize` dead letters in id order, each batch a transaction with the job's progress
 * (`Store.replayJobBatch`), with a turn of the event loop between two, so ingestion and
 * delivery go on meanwhile. Jobs are stored first, so one interrupted by a stop or a crash is
 * carried on at the next start, by whichever node starts (the job row's lock makes nodes take
 * turns). Jobs run one at a time, in the order submitted.
 */
export class ReplayJobRunner {
  private queue: Promise<void> = Promise.resolve();
  private readonly stopping = new AbortController();
  /** Jobs this node has queued or is running, so a sweep does not queue one twice. */
  private readonly scheduled = new Set<string>();
  private sweepTimer: TimerHandle | undefined;

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
    const job = await this.deps.store.createReplayJob({ id: `rpl_${randomUUID().replaceAll('-', '')}`, filter: stored, total, nowMs });
    this.schedule(job.id);
    return job;
  }

  /** Schedules every job left running by an earlier process (or another node that stopped). */
  async resumeRunning(): Promise<void> {
    for (const job of await this.deps.store.runningReplayJobs()) if (!this.scheduled.has(job.id)) this.schedule(job.id);
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
  idle(): Promise<void> {
    return this.queue;
  }

  /** Schedules no more batches: the job running stops after its batch and stays running, carried on at the next start. */
  stop(): Promise<void> {
    this.stopping.abort();
    timersOf(this.deps.clock).clearTimeout(this.sweepTimer);
    return this.queue;
  }

  private schedule(id: string): void {
    this.scheduled.add(id);
    this.queue = this.queue.then(() => this.run(id)).finally(() => this.scheduled.delete(id));
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
      logger.error({ err, replayJobId: id }, 'replay job failed; what it replayed stays replayed, and the rest can be replayed by a new request');
      const reason = err instanceof Error ? err.message : String(err);
      await store.failReplayJob(id, reason, clock.now()).catch((markErr: unknown) => {
        logger.warn({ err: markErr, replayJobId: id }, 'the replay job could not be marked failed; it is carried on at the next start');
      });
    }
  }
}
