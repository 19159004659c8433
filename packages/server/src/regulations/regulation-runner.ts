import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { EventBus } from '../events/event-bus.js';
import type { Catalog } from '../routing/catalog.js';
import type { AffectedSources, DeleteNotice, Regulation, Store } from '../store/store.js';
import type { Clock } from '../util/clock.js';

/**
 * Carries out deletion requests: purges everything stored of the users and of the identities
 * linked to them (see `Store.executeRegulation`), then queues one `delete` notice per user for
 * every enabled destination whose type takes deletion notices (Webhooks does) connected to an
 * affected source: one that held events of that user, or one the request names. Requests are
 * stored first, so one interrupted by a crash or a stop is carried out at the next start.
 */
export class RegulationRunner {
  private queue: Promise<void> = Promise.resolve();
  /** Requests scheduled and not yet carried out (or given up at a stop). */
  private scheduled = 0;
  private readonly stopping = new AbortController();

  constructor(
    private readonly deps: {
      store: Store;
      catalog: Catalog;
      clock: Clock;
      logger: Logger;
      onQueued?: () => void;
      events?: EventBus;
      /** Linked user ids a request follows at most (see `LinkedIdentities`); default `defaultMaxLinkedUsers`. */
      maxLinkedUsers?: number;
      /** Events deleted per transaction; default `defaultPurgeBatchSize`. */
      batchSize?: number;
    },
  ) {}

  /** Stores a request and schedules it; resolves with the stored (pending) request. */
  async submit(userIds: string[], sourceIds: string[] | null): Promise<Regulation> {
    const regulation = await this.deps.store.createRegulation({
      id: `reg_${randomUUID().replaceAll('-', '')}`,
      userIds,
      sourceIds,
      nowMs: this.deps.clock.now(),
    });
    this.schedule(regulation.id);
    return regulation;
  }

  /** Schedules every request left pending by an earlier process. */
  async resumePending(): Promise<void> {
    for (const r of await this.deps.store.pendingRegulations()) this.schedule(r.id);
  }

  /** Resolves once everything scheduled so far has been carried out (or given up by {@link stop}). */
  idle(): Promise<void> {
    return this.queue;
  }

  /**
   * Schedules no more requests and stops the one running at its next batch boundary: the
   * requests not done stay pending, and the next start carries them out from their stored
   * plan. Resolves once the running batch has committed.
   */
  stop(): Promise<void> {
    this.stopping.abort();
    return this.queue;
  }

  private schedule(id: string): void {
    this.scheduled += 1;
    // One at a time, in order: requests touching the same users must not interleave.
    this.queue = this.queue
      .then(() => (this.stopping.signal.aborted ? undefined : this.execute(id)))
      .catch((err) => {
        this.deps.logger.error({ err, regulationId: id }, 'deletion request failed; it stays pending and is retried at the next start');
      })
      .finally(() => {
        this.scheduled -= 1;
        // Once the queue is idle, not after each request: the store coalesces these too.
        if (this.scheduled === 0 && !this.stopping.signal.aborted) this.reclaim();
      });
  }

  private reclaim(): void {
    this.deps.store.reclaimDeleted().catch((err: unknown) => {
      this.deps.logger.warn({ err }, 'the space of the deleted rows could not be reclaimed now; see docs/operations.md#deleted-data');
    });
  }

  private async execute(id: string): Promise<void> {
    const { store, catalog, clock, logger } = this.deps;
    const regulation = await store.getRegulation(id);
    if (!regulation || regulation.status !== 'pending') return;
    const nowMs = clock.now();
    const named = regulation.sourceIds ?? [];
    const noticesFor = (affected: AffectedSources): DeleteNotice[] => {
      const notices: DeleteNotice[] = [];
      for (const [userId, held] of Object.entries(affected)) {
        const sources = new Set([...held, ...named]);
        for (const destination of catalog.enabledDestinations()) {
          const type = catalog.types.get(destination.type)!;
          if (!type.renderDeleteNotice) continue;
          const sourceId = destination.sources.find((s) => sources.has(s));
          if (sourceId !== undefined) notices.push({ destinationId: destination.id, sourceId, userId, body: type.renderDeleteNotice(userId, nowMs) });
        }
      }
      return notices;
    };
    const { batchSize, maxLinkedUsers } = this.deps;
    const done = await store.executeRegulation({ id, nowMs, noticesFor, batchSize, maxLinkedUsers, signal: this.stopping.signal });
    if (done.status === 'pending') {
      logger.info({ regulationId: id, eventsDeleted: done.eventsDeleted }, 'deletion request stopped by the stop; it resumes at the next start');
      return;
    }
    logger.info(
      { regulationId: id, eventsDeleted: done.eventsDeleted, deliveriesDeleted: done.deliveriesDeleted, notices: done.notificationsQueued },
      'deletion request carried out',
    );
    this.deps.events?.emit('regulation:done', {
      regulationId: id,
      eventsDeleted: done.eventsDeleted,
      deliveriesDeleted: done.deliveriesDeleted,
      notices: done.notificationsQueued,
    });
    if (done.notificationsQueued > 0) this.deps.onQueued?.();
  }
}
