import { SOURCE_HEADER, signBody } from '@ferry/webhooks';
import type { WebhookEntry, WebhooksSettings } from './settings.js';
import type { ClaimedDelivery } from '../../store/store.js';
import { userAgent } from '../../util/version.js';

/**
 * The `X-Ferry-Source` value of a delivery, so that a receiver fed by several sources
 * deduplicates on (source, messageId), since two sources may send the same messageId: the id
 * of the source whose event it carries or, for a deletion notice, of the affected source.
 * Deliveries that belong to no source (audience syncs) carry `ferry:<kind>`; the colon keeps
 * that apart from every source id.
 */
export function sourceHeaderValue(job: Pick<ClaimedDelivery, 'sourceId' | 'kind'>): string {
  return job.sourceId ?? `ferry:${job.kind}`;
}

/**
 * The header set of one request to one webhook entry. Static headers come first, spelled as
 * the operator configured them; Ferry's own follow, spelled as the spec spells them, since
 * receivers that look a header up case-sensitively exist and undici sends names as given.
 * The configuration refuses static headers with those names in any case, so none repeats.
 */
export function webhookHeaders(entry: WebhookEntry, signature: string | undefined, source: string): Record<string, string> {
  const headers: Record<string, string> = { ...entry.headers };
  headers['Content-Type'] = 'application/json';
  headers['User-Agent'] = userAgent;
  if (signature !== undefined) headers['X-Signature'] = signature;
  headers[SOURCE_HEADER] = source;
  return headers;
}

/** X-Signature of a body for a destination, or undefined when it has no shared secret. */
export function signatureFor(settings: WebhooksSettings, body: Buffer): string | undefined {
  return settings.sharedSecret ? signBody(body, settings.sharedSecret) : undefined;
}
