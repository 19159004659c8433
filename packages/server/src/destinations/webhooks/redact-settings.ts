import { redacted, redactUrl } from '../../util/redact.js';
import type { WebhooksSettings } from './settings.js';

/** A webhook entry with header values and URL query values hidden. */
export interface RedactedWebhookEntry {
  url: string;
  /** Header names as configured; every value is `[redacted]`, since headers carry credentials. */
  headers: Record<string, string>;
}

/** A signing secret as shown: only when it stops signing (`null`: until removed). */
export interface RedactedSigningSecret {
  expiresAt: string | null;
}

/** Webhooks settings as the admin API shows them: no secret, no header value. */
export interface RedactedWebhooksSettings {
  webhooks: RedactedWebhookEntry[];
  /** Whether requests are signed; the secret itself is never shown. */
  hasSharedSecret: boolean;
  /** Shared secrets a rotation replaced, with the end of each one's overlap; present only while stored. */
  previousSharedSecrets?: RedactedSigningSecret[];
  /** One entry per Standard Webhooks secret, in order; present only when set. */
  standardWebhooks?: { secrets: RedactedSigningSecret[] };
}

/** Hides every secret (shared and Standard Webhooks, current and previous), every header value and the values of URL query parameters. */
export function redactWebhooksSettings(settings: WebhooksSettings): RedactedWebhooksSettings {
  const out: RedactedWebhooksSettings = {
    webhooks: settings.webhooks.map((entry) => ({
      url: redactUrl(entry.url),
      headers: Object.fromEntries(Object.keys(entry.headers).map((name) => [name, redacted])),
    })),
    hasSharedSecret: settings.sharedSecret !== undefined,
  };
  if (settings.previousSharedSecrets !== undefined) out.previousSharedSecrets = settings.previousSharedSecrets.map((e) => ({ expiresAt: e.expiresAt }));
  if (settings.standardWebhooks !== undefined)
    out.standardWebhooks = { secrets: settings.standardWebhooks.secrets.map((e) => ({ expiresAt: e.expiresAt ?? null })) };
  return out;
}
