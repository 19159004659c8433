import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { WebhookSender } from '../destinations/http/sender.js';
import { defaultTestEventName, sendTestCall } from './destination-test-call.js';
import { FerryError } from '../errors/error-codes.js';
import type { Catalog } from '../routing/catalog.js';
import type { Clock } from '../util/clock.js';
import { refuseUnknownKeys } from './unknown-keys.js';

/** What `POST /destinations/{id}/test` needs: the worker's transport and time limit. */
export interface DestinationTestDeps {
  catalog: Catalog;
  sender: WebhookSender;
  /** The delivery's `timeoutMs`. */
  timeoutMs: number;
  clock: Clock;
  logger: Logger;
}

/** An event name longer than this is refused: a test names itself, it carries no data. */
const maxEventNameLength = 200;

/**
 * `POST /destinations/{id}/test` (`admin` tokens): sends one synthetic `track` call to the
 * destination now, enabled or not, and answers `{"ok","attempts"}`, one attempt per URL
 * (see `admin/destination-test-call.ts`). Optional body `{"event"}`. Nothing is queued or stored;
 * the request is audited as `destination.test` like any other POST.
 */
export async function destinationTestRoutes(app: FastifyInstance, deps: DestinationTestDeps): Promise<void> {
  app.post<{ Params: { id: string } }>('/destinations/:id/test', async (request) => {
    const destination = deps.catalog.destination(request.params.id);
    if (!destination) throw new FerryError('not_found', `no destination ${request.params.id}`);
    const body = (request.body ?? {}) as { event?: unknown };
    if (typeof body !== 'object' || Array.isArray(body)) throw new FerryError('bad_request', 'the body must be a JSON object');
    refuseUnknownKeys(body, ['event'], 'key');
    if (body.event !== undefined && (typeof body.event !== 'string' || body.event.trim() === '' || body.event.length > maxEventNameLength))
      throw new FerryError('bad_request', `event must be a non-empty string of at most ${maxEventNameLength} characters`, 'event');
    return sendTestCall(destination, body.event ?? defaultTestEventName, { ...deps, types: deps.catalog.types });
  });
}
