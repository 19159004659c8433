import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { DestinationConfig } from '../config/model.js';
import { normalizeMessage } from '../ingest/normalize.js';
import { FerryError } from '../errors/error-codes.js';
import { routeTargetOf } from '../routing/route-target.js';
import type { ClaimedDelivery } from '../store/store.js';
import type { Clock } from '../util/clock.js';
import { redactUrl } from '../util/redact.js';
import type { WebhookSender } from '../destinations/http/sender.js';
import type { DestinationRegistry } from '../destinations/registry.js';

/** The event name of a test call when the caller names none. */
export const defaultTestEventName = 'Ferry Test Event';

/** The user id every test call carries, so a receiver can tell it from real traffic. */
export const testUserId = 'ferry-test';

/** What a test call is sent with: the worker's own transport and time limit. */
export interface TestCallDeps {
  types: DestinationRegistry;
  /** The process's HTTP transport, SSRF guard included; not the circuit breakers' wrapper, so a test reaches a URL whose circuit is open. */
  sender: WebhookSender;
  /** Each exchange must be answered within this time (the delivery's `timeoutMs`). */
  timeoutMs: number;
  clock: Clock;
  logger: Logger;
}

/** One exchange of a test call, as the attempt log shows one. */
export interface TestExchange {
  /** Query values redacted, as in the attempt log. */
  url: string;
  statusCode: number | null;
  errorClass: string | null;
  latencyMs: number;
  /** The first KB of the response body, or null when none arrived. */
  responseBodyStart: string | null;
}

/** What a test call did: `ok` when every URL answered 2xx. */
export interface TestCallResult {
  ok: boolean;
  attempts: TestExchange[];
}

/**
 * Sends one synthetic `track` call (a fresh `messageId`, `userId` {@link testUserId},
 * `properties: {test: true}`) to a destination now, enabled or not, as one attempt of a
 * delivery would: rendered by its type (its field removals applied, its filter not), signed,
 * and POSTed by the same transport behind the SSRF guard. Nothing is stored: no event, no
 * delivery, no attempt, and the circuit breakers neither hold it back nor count it.
 *
 * @throws FerryError `bad_request` (path `event`) when `eventName` makes no valid call (an
 *   empty name), as ingestion would refuse it.
 */
export async function sendTestCall(destination: DestinationConfig, eventName: string, deps: TestCallDeps): Promise<TestCallResult> {
  const type = deps.types.get(destination.type);
  if (!type) throw new FerryError('invalid_settings', `destination ${destination.id} has type ${destination.type}, which this server does not know`, 'type');
  const nowMs = deps.clock.now();
  const normalised = normalizeMessage(
    { type: 'track', event: eventName, userId: testUserId, properties: { test: true } },
    {},
    { receivedAtMs: nowMs, newMessageId: randomUUID },
  );
  if (!normalised.ok) throw new FerryError('bad_request', normalised.message, 'event');
  const message = normalised.message;
  const strip = routeTargetOf(destination).strip;
  const job: ClaimedDelivery = {
    id: 0,
    destinationId: destination.id,
    kind: 'event',
    body: type.renderMessage(strip === undefined ? message : strip(message)),
    messageId: message.messageId,
    userId: testUserId,
    attemptCount: 0,
    firstAttemptAtMs: null,
    trigger: 'manual',
    createdAtMs: nowMs,
    // The receiver's X-Ferry-Source: the first source the destination is connected to, as a real call of it would carry.
    sourceId: destination.sources[0] ?? null,
  };
  const results = await type.attempt(job, destination, { timeoutMs: deps.timeoutMs, clock: deps.clock, logger: deps.logger, http: deps.sender });
  return {
    ok: results.length > 0 && results.every((r) => r.errorClass === undefined),
    attempts: results.map((r) => ({
      url: redactUrl(r.url),
      statusCode: r.statusCode ?? null,
      errorClass: r.errorClass ?? null,
      latencyMs: Math.round(r.latencyMs),
      responseBodyStart: r.responseBody ?? null,
    })),
  };
}
