import type { Logger } from 'pino';
import type { EventBus } from './event-bus.js';

/**
 * Writes the log lines of the events whose stages do not log themselves (ingestion, the
 * readiness check); the texts and levels are those docs/operations.md lists.
 */
export function logEvents(bus: EventBus, logger: Logger): void {
  bus.on('ingest:rejected', ({ sourceId, rejected }) =>
    logger.info({ sourceId, rejected: rejected.length, codes: [...new Set(rejected.map((r) => r.code))] }, 'messages rejected'),
  );
  bus.on('ingest:refused', ({ sourceId, error }) => {
    // Refusals of the client's own making (a bad key, bad JSON) are answered, not logged.
    if (error !== undefined) logger.error({ err: error, sourceId }, 'ingestion commit failed; answered 503');
  });
  bus.on('store:unavailable', ({ error }) => logger.warn({ err: error }, 'store not ready; /health/ready answers 503'));
  bus.on('store:ready', () => logger.info('store ready again'));
}
