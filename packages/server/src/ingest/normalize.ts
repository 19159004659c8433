/**
 * The pure message logic of ingestion: read a request body into an envelope and its
 * messages, then validate and enrich each message on its own. No HTTP, no store.
 *
 * This is the hot path (tens of thousands of messages per second on one core), so the
 * checks are written by hand, nothing is serialised twice, and a rejected message costs
 * no more than the checks that refused it. Every outcome is a value; nothing here throws
 * on bad input.
 */
import type { ErrorCode } from '../errors/error-codes.js';
import { isWithinJsonDepth, maxMessageDepth } from './json-depth.js';
import type { CallType, NormalizedMessage } from '../model/message.js';
import { formatUtcMs, isFormattableMs } from '../model/timestamps.js';
import type { Envelope, IngestMeta, NormalizeResult } from './message.js';
import { parseIsoTimestamp } from './timestamps.js';

/** At most this many messages in one `/v1/batch` request (Segment's limit). */
export const maxBatchMessages = 2_500;
/** At most this many bytes (UTF-8) in one message, measured on the normalised JSON. */
export const maxMessageBytes = 32_768;
/** A client-sent `messageId` has 1 to this many characters (UTF-16 code units). */
export const maxMessageIdLength = 100;

/** True when a string has no lone surrogate (String.prototype.isWellFormed, Node 20+). */
const isWellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();

/** What {@link readEnvelope} found in a request body. */
export type ReadEnvelopeResult = { ok: true; writeKey?: string; envelope: Envelope; messages: unknown[] } | { ok: false; code: ErrorCode; message: string };

type JsonObject = Record<string, unknown>;

/**
 * Splits a parsed request body into the envelope shared by its messages and the messages
 * themselves, which are not validated here (see {@link normalizeMessage}).
 *
 * - `route: 'batch'` (`POST /v1/batch`): the body is `{batch: [...], sentAt?, context?,
 *   integrations?, writeKey?}`. A missing `batch` array or an envelope field of the wrong
 *   type refuses the request with `invalid_batch` (the message names the field); more than
 *   {@link maxBatchMessages} messages with `too_many_messages`; a `sentAt` that is not an
 *   ISO 8601 date-time with `invalid_timestamp` and an envelope `context`/`integrations`
 *   that would push every message past the depth limit with `too_deeply_nested`. Other
 *   envelope members (analytics-go's batch `messageId`) are ignored. `null` counts as absent.
 * - a call type (`POST /v1/track` etc.): the body is the message. The route decides the
 *   type: a body whose `type` says otherwise is stored with the route's type, as the URL is
 *   what the client chose to call. `writeKey` is read from the body (a non-string one is
 *   `invalid_field`); the message's own `sentAt` is applied by {@link normalizeMessage}, so
 *   the envelope is empty. A body that is not an object is `invalid_message`.
 */
export function readEnvelope(body: unknown, route: 'batch' | CallType): ReadEnvelopeResult {
  if (route !== 'batch') return readSingleCall(body, route);

  if (!isObject(body)) {
    return fail('invalid_batch', 'The body of /v1/batch must be a JSON object with a `batch` array.');
  }
  const batch = body.batch;
  if (!Array.isArray(batch)) return fail('invalid_batch', '`batch` must be an array of messages.');
  if (batch.length > maxBatchMessages) {
    return fail('too_many_messages', `\`batch\` holds ${batch.length} messages; at most ${maxBatchMessages} are accepted.`);
  }

  const envelope: Envelope = {};
  const sentAt = body.sentAt;
  if (sentAt !== undefined && sentAt !== null) {
    if (typeof sentAt !== 'string') return fail('invalid_batch', '`sentAt` must be a string.');
    if (parseIsoTimestamp(sentAt) === undefined) {
      return fail('invalid_timestamp', `\`sentAt\` is not an ISO 8601 date-time: ${describeString(sentAt)}.`);
    }
    envelope.sentAt = sentAt;
  }
  for (const field of ['context', 'integrations'] as const) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    if (!isObject(value)) return fail('invalid_batch', `\`${field}\` must be an object.`);
    // Merged into each message's own `context`/`integrations`, one level below the message.
    if (!isWithinJsonDepth(value, maxMessageDepth - 1)) {
      return fail('too_deeply_nested', `\`${field}\` is nested deeper than ${maxMessageDepth - 1} levels.`);
    }
    envelope[field] = value;
  }
  const writeKey = body.writeKey;
  if (writeKey !== undefined && writeKey !== null && typeof writeKey !== 'string') {
    return fail('invalid_batch', '`writeKey` must be a string.');
  }
  return typeof writeKey === 'string' ? { ok: true, writeKey, envelope, messages: batch } : { ok: true, envelope, messages: batch };
}

function readSingleCall(body: unknown, route: CallType): ReadEnvelopeResult {
  if (!isObject(body)) {
    return fail('invalid_message', `The body of /v1/${route} must be a JSON object: the message itself.`);
  }
  const writeKey = body.writeKey;
  if (writeKey !== undefined && writeKey !== null && typeof writeKey !== 'string') {
    return fail('invalid_field', '`writeKey` must be a string.');
  }
  const message = body.type === route ? body : { ...body, type: route };
  return typeof writeKey === 'string' ? { ok: true, writeKey, envelope: {}, messages: [message] } : { ok: true, envelope: {}, messages: [message] };
}

/** Top-level members with a meaning to Ferry; every other member is kept as sent. */
const knownKeys: ReadonlySet<string> = new Set([
  'type',
  'messageId',
  'userId',
  'anonymousId',
  'event',
  'name',
  'category',
  'groupId',
  'previousId',
  'properties',
  'traits',
  'context',
  'integrations',
  'timestamp',
  'originalTimestamp',
  'sentAt',
  'receivedAt',
  // Dropped: a secret has no place in stored events, and the request was authenticated already.
  'writeKey',
]);

/** Marks a known field whose value has the wrong type. */
const wrongType: unique symbol = Symbol('wrongType');
type Read<T> = T | undefined | typeof wrongType;
/** Marks a numeric id that JSON.parse may have rounded: beyond ±(2^53 − 1). */
const unsafeNumber: unique symbol = Symbol('unsafeNumber');

/**
 * Validates one message and enriches it with the envelope and the request's facts.
 *
 * Checks, in this order (the first failure is the answer): a JSON object
 * (`invalid_message`); nesting within {@link maxMessageDepth} (`too_deeply_nested`);
 * `type` one of the six (`invalid_type`); each known field of the right type
 * (`invalid_field`, naming it), a numeric id an integer within ±(2^53 − 1)
 * (`unsafe_numeric_id`); a non-empty `userId` or `anonymousId`
 * (`missing_identity`); a track's `event` (`missing_event`), a group's `groupId`
 * (`missing_group_id`), an alias's `previousId` (`missing_previous_id`) and `userId`
 * (`missing_identity`); `messageId` of 1..100 characters (`invalid_message_id`);
 * `timestamp`, `originalTimestamp`, `sentAt` as ISO 8601 (`invalid_timestamp`); at most
 * {@link maxMessageBytes} once normalised (`message_too_large`).
 *
 * Lenient where real clients differ: integer `userId`, `anonymousId`, `groupId` and
 * `previousId` within ±(2^53 − 1) become strings; `null` and `""` ids count as absent, and
 * `null` in any other known field counts as absent.
 *
 * Enrichment: envelope `context` and `integrations` are merged under the message's own
 * (top-level keys only; the message wins); `context.ip` is set from the request when
 * absent; `integrations` defaults to `{}`; `messageId` is generated when absent;
 * `receivedAt` is the server clock; the client's `timestamp` (or, from RudderStack SDKs,
 * `originalTimestamp`) is kept as `originalTimestamp`, and `timestamp` is corrected for
 * the client's clock skew as `receivedAt - (sentAt - originalTimestamp)`, or is the
 * client's time when there is no `sentAt`, or `receivedAt` when the client gave no time.
 * The message's `sentAt` wins over the envelope's. `writeKey` is dropped; other unknown
 * top-level members are kept.
 *
 * The result's `json` is the one serialisation of `message`; store it, don't stringify again.
 * The message may share nested objects (properties, traits) with `raw`.
 */
export function normalizeMessage(raw: unknown, envelope: Envelope, meta: IngestMeta): NormalizeResult {
  if (!isObject(raw)) return fail('invalid_message', 'A message must be a JSON object.');
  if (!isWithinJsonDepth(raw, maxMessageDepth)) {
    return fail('too_deeply_nested', `The message is nested deeper than ${maxMessageDepth} levels.`);
  }
  const type = raw.type;
  if (!isCallType(type)) {
    return fail('invalid_type', `\`type\` must be one of identify, track, page, screen, group, alias; got ${describe(type)}.`);
  }

  const userId = readId(raw.userId);
  if (typeof userId === 'symbol') return invalidId('userId', userId);
  const anonymousId = readId(raw.anonymousId);
  if (typeof anonymousId === 'symbol') return invalidId('anonymousId', anonymousId);
  const groupId = readId(raw.groupId);
  if (typeof groupId === 'symbol') return invalidId('groupId', groupId);
  const previousId = readId(raw.previousId);
  if (typeof previousId === 'symbol') return invalidId('previousId', previousId);
  const event = readString(raw.event);
  if (event === wrongType) return invalidField('event', 'a string');
  const name = readString(raw.name);
  if (name === wrongType) return invalidField('name', 'a string');
  const category = readString(raw.category);
  if (category === wrongType) return invalidField('category', 'a string');
  const properties = readObject(raw.properties);
  if (properties === wrongType) return invalidField('properties', 'an object');
  const traits = readObject(raw.traits);
  if (traits === wrongType) return invalidField('traits', 'an object');
  const context = readObject(raw.context);
  if (context === wrongType) return invalidField('context', 'an object');
  const integrations = readObject(raw.integrations);
  if (integrations === wrongType) return invalidField('integrations', 'an object');

  if (userId === undefined && anonymousId === undefined) {
    return fail('missing_identity', 'A message needs a non-empty `userId` or `anonymousId`.');
  }
  switch (type) {
    case 'track':
      if (event === undefined || event === '') return fail('missing_event', 'A track call needs a non-empty `event`.');
      break;
    case 'group':
      if (groupId === undefined) return fail('missing_group_id', 'A group call needs a non-empty `groupId`.');
      break;
    case 'alias':
      if (previousId === undefined) return fail('missing_previous_id', 'An alias call needs a non-empty `previousId`.');
      if (userId === undefined) {
        return fail('missing_identity', 'An alias call needs a `userId`: the identity that `previousId` is linked to.');
      }
      break;
    default:
      break;
  }

  const messageId = readString(raw.messageId);
  // A lone surrogate cannot be stored as UTF-8 and would never match itself again when deduplicating.
  if (messageId === wrongType || messageId === '' || (messageId !== undefined && (messageId.length > maxMessageIdLength || !isWellFormed(messageId)))) {
    return fail('invalid_message_id', `\`messageId\` must be a well-formed string of 1 to ${maxMessageIdLength} characters.`);
  }

  const timestampMs = readTimestamp(raw.timestamp);
  if (timestampMs === wrongType) return invalidTimestamp('timestamp', raw.timestamp);
  const originalTimestampMs = readTimestamp(raw.originalTimestamp);
  if (originalTimestampMs === wrongType) return invalidTimestamp('originalTimestamp', raw.originalTimestamp);
  let sentAtMs = readTimestamp(raw.sentAt);
  if (sentAtMs === wrongType) return invalidTimestamp('sentAt', raw.sentAt);
  if (sentAtMs === undefined && envelope.sentAt !== undefined) {
    sentAtMs = envelopeSentAtMs(envelope.sentAt);
    if (sentAtMs === undefined) return invalidTimestamp('sentAt', envelope.sentAt, 'The batch');
  }

  // `timestamp` is the field Segment's API documents for the client's time; RudderStack
  // SDKs send `originalTimestamp` instead, so it stands in when `timestamp` is absent.
  const clientMs = timestampMs ?? originalTimestampMs;
  const receivedAtMs = meta.receivedAtMs;
  const correctedMs = clientMs === undefined ? receivedAtMs : sentAtMs === undefined ? clientMs : receivedAtMs - (sentAtMs - clientMs);
  if (!isFormattableMs(correctedMs)) {
    return fail('invalid_timestamp', '`timestamp` corrected for clock skew (receivedAt - (sentAt - timestamp)) falls outside years 0000..9999.');
  }

  const mergedContext: JsonObject = { ...envelope.context, ...context };
  if (meta.ip !== undefined && (mergedContext.ip === undefined || mergedContext.ip === null)) mergedContext.ip = meta.ip;

  // Built member by member so the stored JSON has one predictable order: identity, call
  // fields, context, timestamps, then the client's unknown members as they came.
  const out = { type, messageId: messageId ?? meta.newMessageId() } as NormalizedMessage;
  if (userId !== undefined) out.userId = userId;
  if (anonymousId !== undefined) out.anonymousId = anonymousId;
  if (event !== undefined) out.event = event;
  if (name !== undefined) out.name = name;
  if (category !== undefined) out.category = category;
  if (groupId !== undefined) out.groupId = groupId;
  if (previousId !== undefined) out.previousId = previousId;
  if (properties !== undefined) out.properties = properties;
  if (traits !== undefined) out.traits = traits;
  out.context = mergedContext;
  out.integrations = { ...envelope.integrations, ...integrations };
  out.timestamp = formatUtcMs(correctedMs);
  if (clientMs !== undefined) out.originalTimestamp = formatUtcMs(clientMs);
  if (sentAtMs !== undefined) out.sentAt = formatUtcMs(sentAtMs);
  out.receivedAt = formatUtcMs(receivedAtMs);

  const keys = Object.keys(raw);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (knownKeys.has(key)) continue;
    // Assigning to `__proto__` would change the prototype instead of adding a member.
    if (key === '__proto__') Object.defineProperty(out, key, { value: raw[key], enumerable: true, writable: true, configurable: true });
    else out[key] = raw[key];
  }

  const json = JSON.stringify(out);
  // A UTF-16 code unit takes at most 3 bytes in UTF-8, so short messages skip the count.
  if (json.length * 3 > maxMessageBytes) {
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes > maxMessageBytes) {
      return fail('message_too_large', `The message is ${bytes} bytes once normalised; at most ${maxMessageBytes} are accepted.`);
    }
  }
  return { ok: true, message: out, json };
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCallType(value: unknown): value is CallType {
  switch (value) {
    case 'identify':
    case 'track':
    case 'page':
    case 'screen':
    case 'group':
    case 'alias':
      return true;
    default:
      return false;
  }
}

/**
 * An id as a string: integers converted (Segment accepts them), `null` and `""` absent. Any
 * other number may not be the one the client meant: JSON.parse rounds 9007199254740993 to
 * 9007199254740992, and a fraction would be stored as JavaScript prints it (`1.50` and `1.5`
 * both as "1.5"), so two users could silently become one.
 */
function readId(value: unknown): Read<string> | typeof unsafeNumber {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number') return Number.isSafeInteger(value) ? String(value) : unsafeNumber;
  if (value === undefined || value === null) return undefined;
  return wrongType;
}

function readString(value: unknown): Read<string> {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return undefined;
  return wrongType;
}

function readObject(value: unknown): Read<JsonObject> {
  if (value === undefined || value === null) return undefined;
  return isObject(value) ? value : wrongType;
}

function readTimestamp(value: unknown): Read<number> {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') return wrongType;
  return parseIsoTimestamp(value) ?? wrongType;
}

// Every message of a batch shares the envelope's sentAt: parse it once per batch, not per message.
let lastEnvelopeSentAt: string | undefined;
let lastEnvelopeSentAtMs: number | undefined;
function envelopeSentAtMs(sentAt: string): number | undefined {
  if (sentAt !== lastEnvelopeSentAt) {
    lastEnvelopeSentAt = sentAt;
    lastEnvelopeSentAtMs = parseIsoTimestamp(sentAt);
  }
  return lastEnvelopeSentAtMs;
}

function fail(code: ErrorCode, message: string): { ok: false; code: ErrorCode; message: string } {
  return { ok: false, code, message };
}

function invalidField(field: string, expected: string): NormalizeResult {
  return fail('invalid_field', `\`${field}\` must be ${expected}.`);
}

function invalidId(field: string, why: typeof wrongType | typeof unsafeNumber): NormalizeResult {
  if (why === wrongType) return invalidField(field, 'a string or a number');
  return fail(
    'unsafe_numeric_id',
    `\`${field}\` is a number that is not an integer within ±(2^53 − 1), which cannot be kept exactly as sent; send it as a string.`,
  );
}

function invalidTimestamp(field: string, value: unknown, owner = 'The message'): NormalizeResult {
  const got = typeof value === 'string' ? describeString(value) : describe(value);
  return fail('invalid_timestamp', `${owner} \`${field}\` is not an ISO 8601 date-time: ${got}.`);
}

/**
 * A client's string in an error message, by its length only: a rejection is kept for
 * operators, and the value (an email in the wrong field) may be a user's data, which a
 * deletion request could not find there.
 */
function describeString(value: string): string {
  return `a string of ${value.length} characters`;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') return describeString(value);
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}
