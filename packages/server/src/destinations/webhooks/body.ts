/**
 * The exact JSON the Webhooks destination sends for each call type. The string returned is
 * what gets signed and sent, byte for byte; `docs/webhook-bodies.md` shows every body.
 *
 * A body holds exactly the spec's fields plus `messageId` (with the `X-Ferry-Source` header,
 * the key receivers deduplicate on), `anonymousId` when the call had one, and `name` and
 * `category` (page and screen) and screen `properties` when the call had them. Internal
 * fields (receivedAt, originalTimestamp, sentAt, integrations, the client's unknown members)
 * never leave Ferry. Members appear in the order of the body types in `@ferry/webhooks`:
 * version, type, userId, anonymousId, messageId, timestamp, context, then the type's own
 * members.
 */
import type { AliasBody, DeleteBody, GroupBody, IdentifyBody, JsonObject, PageBody, ScreenBody, TrackBody } from '@ferry/webhooks';
import type { NormalizedMessage } from '../../model/message.js';
import { formatUtcMs } from '../../model/timestamps.js';

/**
 * The body for one stored call.
 *
 * @throws TypeError when the message lacks a field that ingestion guarantees for its type
 * (a track without `event`, an alias without `previousId`): that is a bug, not bad input.
 *
 * @example
 * buildWebhookBody(trackMessage)
 * // {"version":1,"type":"track","userId":"u1","messageId":"m1","timestamp":"2024-01-02T03:04:05.678Z","context":{},"event":"Signed Up","properties":{}}
 */
export function buildWebhookBody(message: NormalizedMessage): string {
  const { userId, anonymousId, messageId, timestamp, context } = message;
  switch (message.type) {
    case 'page': {
      const body = { version: 1, type: 'page' } as PageBody;
      addIdentity(body, userId, anonymousId, messageId, timestamp, context);
      if (message.name !== undefined) body.name = message.name;
      if (message.category !== undefined) body.category = message.category;
      body.properties = message.properties ?? {};
      return JSON.stringify(body);
    }
    case 'screen': {
      const body = { version: 1, type: 'screen' } as ScreenBody;
      addIdentity(body, userId, anonymousId, messageId, timestamp, context);
      if (message.name !== undefined) body.name = message.name;
      if (message.category !== undefined) body.category = message.category;
      if (message.properties !== undefined) body.properties = message.properties;
      return JSON.stringify(body);
    }
    case 'identify': {
      const body = { version: 1, type: 'identify' } as IdentifyBody;
      addIdentity(body, userId, anonymousId, messageId, timestamp, context);
      body.traits = message.traits ?? {};
      return JSON.stringify(body);
    }
    case 'track': {
      const body = { version: 1, type: 'track' } as TrackBody;
      addIdentity(body, userId, anonymousId, messageId, timestamp, context);
      body.event = required(message, 'event', message.event);
      body.properties = message.properties ?? {};
      return JSON.stringify(body);
    }
    case 'alias': {
      // The spec carries both identities under spaced keys, so `userId` itself is left out.
      const body = { version: 1, type: 'alias' } as AliasBody;
      addIdentity(body, undefined, anonymousId, messageId, timestamp, context);
      body['Previous ID'] = required(message, 'previousId', message.previousId);
      body['User ID'] = required(message, 'userId', userId);
      return JSON.stringify(body);
    }
    case 'group': {
      const body = { version: 1, type: 'group' } as GroupBody;
      addIdentity(body, userId, anonymousId, messageId, timestamp, context);
      body.groupId = required(message, 'groupId', message.groupId);
      body.traits = message.traits ?? {};
      return JSON.stringify(body);
    }
    default:
      throw new TypeError(`buildWebhookBody: unknown call type ${JSON.stringify((message as { type: unknown }).type)}`);
  }
}

/**
 * A deletion notification: exactly `{"type":"delete","userId":…,"timestamp":…}`, no version
 * and no messageId, as the spec fixes it.
 *
 * @param timestampMs when the deletion was requested, ms since the epoch.
 */
export function buildDeleteBody(userId: string, timestampMs: number): string {
  const body: DeleteBody = { type: 'delete', userId, timestamp: formatUtcMs(timestampMs) };
  return JSON.stringify(body);
}

/** What an audience-membership identify is made of. */
export interface AudienceIdentifyArgs {
  userId?: string;
  anonymousId?: string;
  /** Stable for one membership change, so a retried or replayed sync deduplicates. */
  messageId: string;
  /** When the sync computed the change, ms since the epoch. */
  timestampMs: number;
  /** Usually one member: the audience name in snake_case mapped to `true` or `false`. */
  traits: Record<string, unknown>;
  /** Defaults to `{}`. */
  context?: Record<string, unknown>;
}

/**
 * An identify body for an audience or computed-trait sync, in the same shape and order as
 * any other identify body.
 *
 * @throws TypeError when neither `userId` nor `anonymousId` is given.
 *
 * @example
 * buildAudienceIdentifyBody({ userId: 'u1', messageId: 'aud-1', timestampMs: 0, traits: { power_users: true } })
 * // {"version":1,"type":"identify","userId":"u1","messageId":"aud-1","timestamp":"1970-01-01T00:00:00.000Z","context":{},"traits":{"power_users":true}}
 */
export function buildAudienceIdentifyBody(args: AudienceIdentifyArgs): string {
  if (args.userId === undefined && args.anonymousId === undefined) {
    throw new TypeError('buildAudienceIdentifyBody: a userId or an anonymousId is required');
  }
  const body = { version: 1, type: 'identify' } as IdentifyBody;
  addIdentity(body, args.userId, args.anonymousId, args.messageId, formatUtcMs(args.timestampMs), args.context ?? {});
  body.traits = args.traits;
  return JSON.stringify(body);
}

type IdentityMembers = { userId?: string; anonymousId?: string; messageId: string; timestamp: string; context: JsonObject };

// Members are added one by one because JSON.stringify follows insertion order, and optional
// members must be absent rather than `undefined` for the body's own consumers.
function addIdentity(
  body: IdentityMembers,
  userId: string | undefined,
  anonymousId: string | undefined,
  messageId: string,
  timestamp: string,
  context: JsonObject,
): void {
  if (userId !== undefined) body.userId = userId;
  if (anonymousId !== undefined) body.anonymousId = anonymousId;
  body.messageId = messageId;
  body.timestamp = timestamp;
  body.context = context;
}

function required(message: NormalizedMessage, field: string, value: string | undefined): string {
  if (value === undefined) {
    throw new TypeError(`buildWebhookBody: ${message.type} message ${message.messageId} has no ${field}`);
  }
  return value;
}
