import { FerryError } from '../errors/error-codes.js';
import { parseIsoTimestamp } from '../ingest/timestamps.js';

/**
 * Readers of the admin API's query parameters and body fields: each returns the value, or
 * undefined when it is absent, and throws `bad_request` naming the parameter when it is
 * malformed.
 */

/** `limit`: 1 to 1000, default 100. */
export function pageLimit(raw: unknown): number {
  const n = raw === undefined ? 100 : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new FerryError('bad_request', 'limit must be an integer from 1 to 1000', 'limit');
  return n;
}

export function optionalInt(raw: unknown, name: string): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0 || raw === '') throw new FerryError('bad_request', `${name} must be a non-negative integer`, name);
  return n;
}

export function optionalString(raw: unknown, name: string): string | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || raw.length === 0) throw new FerryError('bad_request', `${name} must be a non-empty string`, name);
  return raw;
}

/** One of `allowed`, or undefined when absent. */
export function optionalChoice<T extends string>(raw: unknown, name: string, allowed: readonly T[]): T | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !(allowed as readonly string[]).includes(raw))
    throw new FerryError('bad_request', `${name} must be one of ${allowed.join(', ')}`, name);
  return raw as T;
}

/** An ISO 8601 date-time (any offset, with or without milliseconds), as ms since the epoch. */
export function optionalTime(raw: unknown, name: string): number | undefined {
  if (raw === undefined) return undefined;
  const ms = typeof raw === 'string' ? parseIsoTimestamp(raw) : undefined;
  if (ms === undefined) throw new FerryError('bad_request', `${name} must be an ISO 8601 date-time`, name);
  return ms;
}

export function stringList(raw: unknown, name: string, required: boolean): string[] | undefined {
  if (raw === undefined && !required) return undefined;
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > 1000 || !raw.every((v) => typeof v === 'string' && v.length > 0))
    throw new FerryError('bad_request', `${name} must be a list of 1 to 1000 non-empty strings`, name);
  return raw as string[];
}

/** A body that must be a JSON object. */
export function objectBody(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new FerryError('bad_request', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

/**
 * The cursor of a listing newest first: the creation time and id of the last item of the
 * previous page, as `<ms>.<id>` (opaque to callers: they pass back `next` as it came).
 */
export function timeCursor(item: { createdAtMs: number; id: string }): string {
  return `${item.createdAtMs}.${item.id}`;
}

/** Reads an `after` made by {@link timeCursor}. */
export function optionalTimeCursor(raw: unknown): { createdAtMs: number; id: string } | undefined {
  if (raw === undefined) return undefined;
  const match = typeof raw === 'string' ? /^(\d{1,15})\.(.+)$/.exec(raw) : null;
  if (!match) throw new FerryError('bad_request', 'after must be the `next` of a previous page', 'after');
  return { createdAtMs: Number(match[1]), id: match[2]! };
}
