import { AnalyticsError } from './errors.js';
import { isStorableMs, parseIsoTimestamp } from './iso-timestamp.js';
import type { CallType } from './messages.js';

// Callers may be plain JavaScript, so every check looks at the runtime value, not the type.

const isNonEmptyString = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function optionalString(m: Record<string, unknown>, key: string): void {
  const v = m[key];
  if (v !== undefined && typeof v !== 'string') {
    throw new AnalyticsError('invalid_field', `\`${key}\` must be a string.`);
  }
}

function optionalObject(m: Record<string, unknown>, key: string): void {
  const v = m[key];
  if (v !== undefined && !isPlainObject(v)) {
    throw new AnalyticsError('invalid_field', `\`${key}\` must be a plain object.`);
  }
}

function checkIntegrations(v: unknown): void {
  if (v === undefined) return;
  if (!isPlainObject(v)) throw new AnalyticsError('invalid_field', '`integrations` must be a plain object.');
  for (const [name, value] of Object.entries(v)) {
    if (typeof value !== 'boolean' && !isPlainObject(value)) {
      throw new AnalyticsError('invalid_field', `\`integrations.${name}\` must be a boolean or a settings object.`);
    }
  }
}

/**
 * Throws an {@link AnalyticsError} when `m` cannot be sent as a call of `type`. The rules are
 * the ingestion API's, applied early so an invalid message never enters the queue.
 */
export function validateMessage(type: CallType, m: unknown): asserts m is Record<string, unknown> {
  if (!isPlainObject(m)) throw new AnalyticsError('invalid_field', `${type}() takes a message object.`);

  for (const key of ['userId', 'anonymousId', 'event', 'name', 'category', 'groupId', 'previousId']) {
    optionalString(m, key);
  }
  for (const key of ['traits', 'properties', 'context']) optionalObject(m, key);
  checkIntegrations(m['integrations']);

  if (type === 'alias') {
    if (!isNonEmptyString(m['previousId'])) throw new AnalyticsError('missing_previous_id');
    if (!isNonEmptyString(m['userId'])) throw new AnalyticsError('missing_user_id');
  } else if (!isNonEmptyString(m['userId']) && !isNonEmptyString(m['anonymousId'])) {
    throw new AnalyticsError('missing_identity');
  }
  if (type === 'track' && !isNonEmptyString(m['event'])) throw new AnalyticsError('missing_event');
  if (type === 'group' && !isNonEmptyString(m['groupId'])) throw new AnalyticsError('missing_group_id');

  const id = m['messageId'];
  if (id !== undefined && (!isNonEmptyString(id) || id.length > 100)) throw new AnalyticsError('invalid_message_id');
}

/**
 * The timestamp to send for a caller's `timestamp`, or an {@link AnalyticsError}
 * `invalid_timestamp` when the server would refuse it.
 */
export function normalizeTimestamp(v: unknown): string {
  if (v instanceof Date) {
    if (!isStorableMs(v.getTime())) throw new AnalyticsError('invalid_timestamp');
    return v.toISOString();
  }
  // Kept as written: the server reads every form parseIsoTimestamp accepts, offset included.
  if (typeof v === 'string' && parseIsoTimestamp(v) !== undefined) return v;
  throw new AnalyticsError('invalid_timestamp');
}
