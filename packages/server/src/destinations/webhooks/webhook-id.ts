import { createHash } from 'node:crypto';
import type { ClaimedDelivery } from '../../store/store.js';

// What travels in a header unchanged: visible ASCII, no space (HTTP trims spaces at the ends).
const headerSafe = /^[\x21-\x7e]+$/;

/**
 * The `webhook-id` of a delivery, the same on every attempt, retry and replay, and on every
 * node, so a receiver deduplicates on it (docs/delivery.md):
 *
 * - an event or an audience identify: its `messageId`, when every character is visible ASCII
 *   (what clients and Ferry generate); a `messageId` with other characters (spaces,
 *   non-ASCII) cannot travel in a header as it is, and becomes `ferry_` and the base64url of
 *   the first 18 bytes of its SHA-256;
 * - a deletion notice, which has no `messageId`: `ferry_` and the same digest of its source
 *   and its body (the user and the time of the request), the same for every retry of it.
 */
export function webhookIdFor(job: Pick<ClaimedDelivery, 'kind' | 'messageId' | 'sourceId' | 'body'>): string {
  if (job.messageId !== null && headerSafe.test(job.messageId)) return job.messageId;
  const hash = createHash('sha256');
  if (job.messageId !== null) hash.update('message\0').update(job.messageId);
  else hash.update(`${job.kind}\0${job.sourceId ?? ''}\0`).update(job.body);
  return `ferry_${hash.digest().subarray(0, 18).toString('base64url')}`;
}
