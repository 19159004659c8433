import { AnalyticsError } from './errors.js';
import { libraryInfo } from './library-info.js';
import type { CallType } from './messages.js';
import { utf8Length } from './utf8-length.js';
import { normalizeTimestamp, validateMessage } from './validate-message.js';

/** A message ready for the queue: serialised once, with its size known. */
export interface BuiltMessage {
  messageId: string;
  /** The message as JSON; batches are built by joining these strings. */
  json: string;
  /** UTF-8 size of `json`. */
  bytes: number;
}

const contextJson = JSON.stringify({ library: libraryInfo });

// The common call carries none of the fields the client stamps, so the stamped fields can be
// prepended to the caller's own JSON: no copy of the message object, half the garbage.
function isPlain(type: CallType, m: Record<string, unknown>): boolean {
  return (
    m['type'] === undefined &&
    m['messageId'] === undefined &&
    m['timestamp'] === undefined &&
    m['context'] === undefined &&
    m['toJSON'] === undefined &&
    !(type === 'page' && m['traits'] !== undefined)
  );
}

function stampJson(type: CallType, messageId: string, timestamp: string, json: string): string {
  // messageId is a generated UUID here (a caller's own id takes the other path): no escaping needed.
  const head = `{"type":"${type}","messageId":"${messageId}","timestamp":"${timestamp}","context":${contextJson}`;
  return json.length > 2 ? `${head},${json.slice(1)}` : `${head}}`;
}

let lastMs = Number.NaN;
let lastIso = '';
// A burst makes hundreds of calls per millisecond; formatting the time once per ms is enough.
function isoAt(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}

function stampedCopyJson(type: CallType, input: Record<string, unknown>, messageId: string, timestamp: string): string {
  const userContext = input['context'] as Record<string, unknown> | undefined;
  const context = userContext === undefined ? { library: libraryInfo } : { library: libraryInfo, ...userContext };
  const out: Record<string, unknown> = { ...input, type, messageId, timestamp, context };
  if (type === 'page' && input['traits'] !== undefined) {
    out['properties'] = { ...(input['traits'] as object), ...(input['properties'] as object | undefined) };
    delete out['traits'];
  }
  return JSON.stringify(out);
}

/** What building a message needs from its surroundings. */
export interface BuildContext {
  now(): number;
  newMessageId(): string;
  maxMessageBytes: number;
}

/**
 * Validates a call, stamps `type`, `messageId`, `timestamp` and `context.library`, and
 * serialises it. Throws an {@link AnalyticsError} for anything that must not be queued.
 */
export function buildMessage(type: CallType, input: unknown, ctx: BuildContext): BuiltMessage {
  validateMessage(type, input);
  const messageId = (input['messageId'] as string | undefined) ?? ctx.newMessageId();
  const timestamp = input['timestamp'] === undefined ? isoAt(ctx.now()) : normalizeTimestamp(input['timestamp']);
  let json: string;
  try {
    json = isPlain(type, input) ? stampJson(type, messageId, timestamp, JSON.stringify(input)) : stampedCopyJson(type, input, messageId, timestamp);
  } catch (cause) {
    throw new AnalyticsError('not_serializable', `The ${type} message cannot be serialised: ${String(cause)}`, { cause });
  }
  const bytes = utf8Length(json);
  if (bytes > ctx.maxMessageBytes) {
    throw new AnalyticsError('message_too_large', `The ${type} message is ${bytes} bytes once serialised; the limit is ${ctx.maxMessageBytes}.`);
  }
  return { messageId, json, bytes };
}
