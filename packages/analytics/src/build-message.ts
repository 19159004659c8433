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
  const timestamp =
    input['timestamp'] === undefined ? new Date(ctx.now()).toISOString() : normalizeTimestamp(input['timestamp']);
  const userContext = input['context'] as Record<string, unknown> | undefined;
  const context = userContext === undefined ? { library: libraryInfo } : { library: libraryInfo, ...userContext };

  const out: Record<string, unknown> = { ...input, type, messageId, timestamp, context };
  if (type === 'page' && input['traits'] !== undefined) {
    out['properties'] = { ...(input['traits'] as object), ...(input['properties'] as object | undefined) };
    delete out['traits'];
  }

  let json: string;
  try {
    json = JSON.stringify(out);
  } catch (cause) {
    throw new AnalyticsError('not_serializable', `The ${type} message cannot be serialised: ${String(cause)}`, { cause });
  }
  const bytes = utf8Length(json);
  if (bytes > ctx.maxMessageBytes) {
    throw new AnalyticsError(
      'message_too_large',
      `The ${type} message is ${bytes} bytes once serialised; the limit is ${ctx.maxMessageBytes}.`,
    );
  }
  return { messageId, json, bytes };
}
