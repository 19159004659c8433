import type { Logger } from 'pino';
import type { Clock } from '../util/clock.js';
import { RepeatedErrorLog } from '../util/repeated-error-log.js';
import type { EventBus } from './event-bus.js';

/** While ingestion commits keep failing the same way, at most one line per this many ms after the full one. */
export const ingestErrorLogIntervalMs = 60_000;

/**
 * Writes the log lines of the events whose stages do not log themselves (ingestion, the
 * readiness check, a delivery's success at `debug`, the circuit breakers' state changes); a line about an HTTP request carries its
 * id as `reqId`, as the answer carries it in `X-Request-Id`. The texts and levels are those docs/operations.md lists. A store failure
 * that refuses requests (a full disk refuses every one) is logged through a
 * {@link RepeatedErrorLog}: in full once per kind of error, then one line per interval with a
 * count, and a line when a commit succeeds again.
 */
export function logEvents(bus: EventBus, logger: Logger, clock: Clock): void {
  const commitErrors = new RepeatedErrorLog({
    logger,
    clock,
    intervalMs: ingestErrorLogIntervalMs,
    message: 'ingestion commit failed; answered 503',
    recoveredMessage: 'ingestion commits work again',
  });
  bus.on('ingest:accepted', () => commitErrors.resolved());
  bus.on('ingest:rejected', ({ sourceId, rejected, requestId }) =>
    logger.info({ reqId: requestId, sourceId, rejected: rejected.length, codes: [...new Set(rejected.map((r) => r.code))] }, 'messages rejected'),
  );
  bus.on('ingest:refused', ({ sourceId, error, requestId }) => {
    // Refusals of the client's own making (a bad key, bad JSON) are answered, not logged.
    if (error !== undefined) commitErrors.report(error, { reqId: requestId, sourceId });
  });
  // Listening makes the worker build an event per success, many thousand a second: only when
  // the line would be written. A level changed later is not followed.
  if (logger.isLevelEnabled('debug'))
    bus.on('delivery:succeeded', ({ id, destinationId, attempts }) => logger.debug({ deliveryId: id, destinationId, attempts }, 'delivery succeeded'));
  bus.on('store:unavailable', ({ error }) => logger.warn({ err: error }, 'store not ready; /health/ready answers 503'));
  bus.on('store:ready', () => logger.info('store ready again'));
  bus.on('breaker:opened', ({ destinationId, url, reason, failures, cooldownMs, probeAtMs }) =>
    logger.warn(
      { destinationId, url, reason, failures, cooldownMs, probeAt: new Date(probeAtMs).toISOString() },
      'circuit breaker opened; nothing is sent to this URL until its probe',
    ),
  );
  bus.on('breaker:half-open', ({ destinationId, url }) => logger.info({ destinationId, url }, 'circuit breaker half-open; one probe sent'));
  bus.on('breaker:closed', ({ destinationId, url, reason, openForMs }) => logger.info({ destinationId, url, reason, openForMs }, 'circuit breaker closed'));
}
