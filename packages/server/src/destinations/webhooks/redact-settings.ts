import { redacted, redactUrl } from '../../util/redact.js';
import type { WebhooksSettings } from './settings.js';

/** A webhook entry with header values and URL query values hidden. */
export interface RedactedWebhookEntry {
  url: string;
  /** Header names as configured; every value is `[redacted]`, since headers carry credentials. */
  headers: Record<string, string>;
}

/** Webhooks settings as the admin API shows them: no shared secret, no header value. */
export interface RedactedWebhooksSettings {
  webhooks: RedactedWebhookEntry[];
  /** Whether requests are signed; the secret itself is never shown. */
  hasSharedSecret: boolean;
}

/** Hides the shared secret, every header value and the values of URL query parameters. */
export function redactWebhooksSettings(settings: WebhooksSettings): RedactedWebhooksSettings {
  return {
    webhooks: settings.webhooks.map((entry) => ({
      url: redactUrl(entry.url),
      headers: Object.fromEntries(Object.keys(entry.headers).map((name) => [name, redacted])),
    })),
    hasSharedSecret: settings.sharedSecret !== undefined,
  };
}
