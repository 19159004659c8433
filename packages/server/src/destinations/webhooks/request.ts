import { signBody } from '@ferry/webhooks';
import type { WebhookEntry, WebhooksSettings } from '../../config/model.js';
import { userAgent } from '../../util/version.js';

/**
 * The header set of one request to one webhook entry. Static headers come first so the
 * fixed ones can never be overridden (the config also refuses those names).
 */
export function webhookHeaders(entry: WebhookEntry, signature: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { ...entry.headers };
  headers['content-type'] = 'application/json';
  headers['user-agent'] = userAgent;
  if (signature !== undefined) headers['x-signature'] = signature;
  return headers;
}

/** X-Signature of a body for a destination, or undefined when it has no shared secret. */
export function signatureFor(settings: WebhooksSettings, body: Buffer): string | undefined {
  return settings.sharedSecret ? signBody(body, settings.sharedSecret) : undefined;
}
