import { headerValue, type HeadersLike } from './header-value.js';

export type { HeadersLike } from './header-value.js';

/**
 * The header naming the source a delivery was made for: the source id of the event (or, on a
 * delete notice, of the affected source), or `ferry:audience` on an audience-membership
 * identify, which belongs to no source.
 */
export const SOURCE_HEADER = 'X-Ferry-Source';

/**
 * The key to deduplicate one Ferry webhook on: delivery is at least once, so the same
 * delivery can arrive more than once, with the same key each time.
 *
 * The key is `<source>/<messageId>`, the source taken from the `X-Ferry-Source` header: two
 * sources feeding one destination may send the same `messageId`, and a key on `messageId`
 * alone would let one suppress the other's event. A delete notice has no `messageId`;
 * `delete:<userId>:<timestamp>` stands in for it. A source id never contains `/`, so the
 * key splits back at its first `/`.
 *
 * @param headers - the request headers (any case)
 * @param body - the parsed JSON body
 * @returns the key, or `undefined` when the header or the body's members are missing (a
 *   request not sent by Ferry, or by a version before the header)
 *
 * @example
 * ```ts
 * import { dedupKey } from '@ferry/webhooks';
 *
 * const key = dedupKey(req.headers, body); // e.g. 'backend/msg_2b7f0c1e'
 * if (key !== undefined && (await seen.has(key))) return res.status(200).end();
 * ```
 */
export function dedupKey(headers: HeadersLike, body: unknown): string | undefined {
  const source = headerValue(headers, SOURCE_HEADER);
  if (source === undefined || source === '' || body === null || typeof body !== 'object') return undefined;
  const { type, messageId, userId, timestamp } = body as Record<string, unknown>;
  if (typeof messageId === 'string') return `${source}/${messageId}`;
  if (type === 'delete' && typeof userId === 'string' && typeof timestamp === 'string') {
    return `${source}/delete:${userId}:${timestamp}`;
  }
  return undefined;
}
