import type { Logger } from 'pino';
import type { NormalizedMessage } from '../model/message.js';
import type { Catalog } from '../routing/catalog.js';
import { routeMessage } from '../routing/route.js';
import type { ArchivedEvent, ArchiveFilter, Store } from '../store/store.js';
import { unrouted } from '../store/replay-jobs-store.js';
import { timersOf, type Clock } from '../util/clock.js';

/** How an archive replay is paced. */
export interface ArchivePacing {
  /** Events looked at per batch, and the destination's pending deliveries at which a batch waits (live traffic first). */
  batchSize: number;
  /** How long a job held back (by the destination's backlog, or while it is disabled) waits before it looks again. */
  pollMs: number;
}

/** What an archive job needs to run. */
export interface ArchiveJobDeps {
  store: Store;
  catalog: Catalog;
  clock: Clock;
  logger: Logger;
  pacing: ArchivePacing;
  /** Called after a batch created deliveries, so the worker looks at once. */
  onQueued?: () => void;
}

/**
 * The body an event's destination gets, as ingestion would have routed it now: through the
 * route from the event's source to the destination (its filter, its field removals, the
 * call's `integrations`), or null when the call does not pass. `unrouted` when this node's
 * catalogue has no such route (the destination was disabled meanwhile, the source is not yet
 * seen here): the batch is held, and `onUnrouted` called, rather than the event skipped.
 */
export function archiveRenderer(
  catalog: Catalog,
  destinationId: string,
  logger?: Logger,
  onUnrouted?: () => void,
): (event: ArchivedEvent) => string | null | typeof unrouted {
  return (event) => {
    const target = catalog.routesOf(event.sourceId).find((t) => t.destination.id === destinationId);
    if (target === undefined) {
      onUnrouted?.();
      return unrouted;
    }
    // One event that cannot be rendered (stored JSON that does not parse, a renderer that
    // throws on it) is left out and counted skipped: it must not fail the job for the rest.
    try {
      const message = JSON.parse(event.json) as NormalizedMessage;
      return routeMessage(message, [target], catalog.types)[0]?.body ?? null;
    } catch (err) {
      logger?.warn({ err, eventId: event.id, destinationId }, 'archive replay left out an event it could not render');
      return null;
    }
  };
}

/** A catalogue reload that failed: the store behind it is read again at the next try. */
class CatalogReloadError extends Error {
  constructor(override readonly cause: unknown) {
    super('the catalogue could not be reloaded');
  }
}

/** The longest wait between two tries after transient errors, whatever `pollMs` is. */
const maxBackoffMs = 60_000;

/**
 * Carries one archive replay job on until it is over (done, cancelled, failed) or `signal`
 * aborts (it stays running, carried on at the next start), a batch at a time. A batch waits
 * `pollMs` while the destination holds `batchSize` pending deliveries or more, or is disabled:
 * live deliveries go first and the replay fills what capacity is left. With a `ratePerSecond`,
 * after a batch that created n deliveries the job waits n / rate seconds, a time kept on the job
 * in the store so that the nodes running it share the rate. `wake` ends a wait early
 * (a cancel). A deleted destination fails the job. An unavailable store, or a catalogue that
 * cannot be reloaded, is waited out (`pollMs`, doubled after each failure in a row, at most a
 * minute); an event that cannot be rendered is skipped. Any other error rejects.
 */
export async function runArchiveJob(deps: ArchiveJobDeps, id: string, signal: AbortSignal, wakeUp: (fn: () => void) => void): Promise<void> {
  const { store, catalog, clock, logger, pacing } = deps;
  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      // An abort that came while a batch ran fires no listener added after it.
      if (signal.aborted) return resolve();
      const timers = timersOf(clock);
      const timer = timers.setTimeout(done, ms);
      function done() {
        timers.clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done);
      wakeUp(done);
    });
  const reload = async (): Promise<void> => {
    try {
      await catalog.reload();
    } catch (err) {
      throw new CatalogReloadError(err);
    }
  };
  let failures = 0;
  for (;;) {
    if (signal.aborted) return;
    let next: 'stop' | 'go';
    try {
      next = await step();
      failures = 0;
    } catch (err) {
      // A store that is unavailable for a while (locked, restarting, a connection reset) or a
      // catalogue that could not be read again is waited out, with a growing wait; anything
      // else fails the job (the runner marks it failed).
      if (!(err instanceof CatalogReloadError) && !store.isUnavailable(err)) throw err;
      failures++;
      const ms = Math.min(pacing.pollMs * 2 ** (failures - 1), Math.max(pacing.pollMs, maxBackoffMs));
      logger.warn(
        { err: err instanceof CatalogReloadError ? err.cause : err, replayJobId: id, retryInMs: ms },
        'archive replay batch could not run; trying again',
      );
      await wait(ms);
      continue;
    }
    if (next === 'stop') return;
  }

  /** One batch, or one wait: 'stop' once the job is over or gone. */
  async function step(): Promise<'stop' | 'go'> {
    const job = await store.getReplayJob(id);
    if (job === null || job.status !== 'running' || job.kind !== 'archive') return 'stop';
    const filter: ArchiveFilter = job.filter;
    // Another node may have created the destination since this node's catalogue was loaded:
    // it is read again before the job is failed for a destination that is gone.
    if (catalog.destination(filter.destinationId) === undefined) await reload();
    const destination = catalog.destination(filter.destinationId);
    if (destination === undefined) {
      await store.failReplayJob(id, `destination ${filter.destinationId} was deleted`, clock.now());
      logger.warn({ replayJobId: id, destinationId: filter.destinationId }, 'archive replay job failed: its destination was deleted');
      return 'stop';
    }
    if (!catalog.enabledDestinations().some((d) => d.id === destination.id)) {
      await wait(pacing.pollMs);
      return 'go';
    }
    const rate = filter.ratePerSecond;
    const limit = rate === undefined ? pacing.batchSize : Math.max(1, Math.min(pacing.batchSize, Math.floor(rate)));
    let sawUnrouted = false;
    const result = await store.archiveReplayBatch({
      id,
      limit,
      nowMs: clock.now(),
      backlogLimit: pacing.batchSize,
      render: archiveRenderer(catalog, destination.id, logger, () => (sawUnrouted = true)),
    });
    if (result.queued > 0) deps.onQueued?.();
    if (result.held && sawUnrouted) {
      // This node's catalogue may be behind (a source or route added on another node, a
      // destination disabled): read it again, and try after the poll; the job pauses while
      // the route is missing, as it does while its destination is disabled.
      await reload();
      await wait(pacing.pollMs);
      return 'go';
    }
    if (result.held) {
      // Held by the job's rate (another node's batch may have set it): until then exactly.
      await wait(result.nextBatchAtMs === null ? pacing.pollMs : Math.max(0, result.nextBatchAtMs - clock.now()));
      return 'go';
    }
    const after = result.job;
    if (after === null || after.status !== 'running') {
      if (after?.status === 'done')
        logger.info({ replayJobId: id, replayed: after.replayed, skipped: after.skipped, total: after.total }, 'archive replay job done');
      return 'stop';
    }
    if (result.nextBatchAtMs !== null && result.nextBatchAtMs > clock.now()) await wait(result.nextBatchAtMs - clock.now());
    else await new Promise<void>((resolve) => setImmediate(resolve));
    return 'go';
  }
}
