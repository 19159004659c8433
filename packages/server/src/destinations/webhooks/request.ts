import { ROTATION_SIGNATURES_HEADER, signBody, SOURCE_HEADER, STANDARD_WEBHOOKS_HEADERS, standardWebhookSignatures } from '@ferry/webhooks';
import { liveSecrets, liveSharedSecrets } from './live-secrets.js';
import type { WebhookEntry, WebhooksSettings } from './settings.js';
import type { ClaimedDelivery } from '../../store/store.js';
import { userAgent } from '../../util/version.js';
import { webhookIdFor } from './webhook-id.js';

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

/** The signature headers of one attempt, computed once and sent to every URL. */
export interface RequestSignatures {
  /** `X-Signature`, when the destination has a shared secret. */
  xSignature?: string;
  /** `X-Ferry-Signatures`, while a shared-secret rotation overlaps. */
  rotationSignatures?: string;
  /** The Standard Webhooks headers, when the destination lists `standardWebhooks.secrets`. */
  standard?: { id: string; timestamp: string; signature: string };
}

/**
 * The header set of one request to one webhook entry. Static headers come first, spelled as
 * the operator configured them; Ferry's own follow, spelled as the spec spells them (the
 * Standard Webhooks ones in lower case, as theirs does), since receivers that look a header
 * up case-sensitively exist and undici sends names as given. The configuration refuses static
 * headers with those names in any case, so none repeats.
 */
export function webhookHeaders(entry: WebhookEntry, signatures: RequestSignatures, source: string): Record<string, string> {
  // Object.assign, not a spread: V8 gives `{ ...headers }` plus keys added after it a hidden
  // class of its own each time (see delivery/worker.ts), one per request here. (A header named
  // `__proto__`, which Object.assign would not copy, never gets this far: the settings'
  // parsing already leaves it out.)
  const headers: Record<string, string> = Object.assign({}, entry.headers);
  headers['Content-Type'] = 'application/json';
  headers['User-Agent'] = userAgent;
  if (signatures.xSignature !== undefined) headers['X-Signature'] = signatures.xSignature;
  if (signatures.rotationSignatures !== undefined) headers[ROTATION_SIGNATURES_HEADER] = signatures.rotationSignatures;
  headers[SOURCE_HEADER] = source;
  const standard = signatures.standard;
  if (standard !== undefined) {
    headers[STANDARD_WEBHOOKS_HEADERS.id] = standard.id;
    headers[STANDARD_WEBHOOKS_HEADERS.timestamp] = standard.timestamp;
    headers[STANDARD_WEBHOOKS_HEADERS.signature] = standard.signature;
  }
  return headers;
}

/**
 * Every signature of one attempt of `job` at `nowMs`: one HMAC per secret that signs then, and
 * nothing for a destination without secrets. The Standard Webhooks timestamp is this
 * attempt's (Unix seconds), so each retry is signed anew with the same `webhook-id`.
 *
 * `X-Signature` is the spec's, from `sharedSecret`; during a rotation it is signed with the
 * oldest previous secret still signing, so a receiver that changed nothing keeps verifying
 * until that one expires, and `X-Ferry-Signatures` carries every signature, newest first.
 */
export function signaturesFor(
  settings: WebhooksSettings,
  job: Pick<ClaimedDelivery, 'kind' | 'messageId' | 'sourceId' | 'body'>,
  body: Buffer,
  nowMs: number,
): RequestSignatures {
  const out: RequestSignatures = {};
  const shared = liveSharedSecrets(settings, nowMs);
  if (shared.length === 1) out.xSignature = signBody(body, shared[0]!);
  else if (shared.length > 1) {
    const each = shared.map((secret) => signBody(body, secret));
    out.xSignature = each.at(-1)!;
    out.rotationSignatures = each.join(' ');
  }
  const standard = settings.standardWebhooks;
  if (standard !== undefined) {
    const secrets = liveSecrets(standard.secrets, nowMs);
    // Every secret expired and none added: the request goes unsigned by this scheme rather than not at all.
    if (secrets.length > 0) {
      const id = webhookIdFor(job);
      const seconds = Math.floor(nowMs / 1000);
      out.standard = { id, timestamp: String(seconds), signature: standardWebhookSignatures(id, seconds, body, secrets) };
    }
  }
  return out;
}
