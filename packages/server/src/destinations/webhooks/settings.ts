/** What a Webhooks destination is configured with. */

/** One endpoint of a Webhooks destination. */
export interface WebhookEntry {
  /** A full http:// or https:// URL. */
  url: string;
  /** At most 5 static headers; names cannot override Content-Type, Content-Length, Host, User-Agent, X-Signature or Ferry's other headers. */
  headers: Record<string, string>;
}

/**
 * A signing secret, with the end of its overlap when a rotation replaced it. Secret: never
 * logged, never returned by the admin API.
 */
export interface SigningSecret {
  secret: string;
  /**
   * ISO 8601 in UTC (`formatUtcMs`). From then on the secret signs nothing (every node
   * compares it with its own clock at each attempt), and the next rotation drops it from the
   * stored settings. Absent: it signs until removed.
   */
  expiresAt?: string;
}

/** Standard Webhooks signing (DESIGN.md): `webhook-id`, `webhook-timestamp`, `webhook-signature`. */
export interface StandardWebhooksSettings {
  /** 1 to 5 `whsec_` secrets (24 to 64 bytes each); every one not expired signs each request. */
  secrets: SigningSecret[];
}

/** Settings of a destination of type `Webhooks`, after the single `webhookUrl` form has been folded into `webhooks`. */
export interface WebhooksSettings {
  /** 1 to 5 entries. */
  webhooks: WebhookEntry[];
  /** When set, every request carries X-Signature. Secret: never logged, never returned by the admin API. */
  sharedSecret?: string;
  /**
   * Shared secrets a rotation replaced, newest first (at most 4), each until its `expiresAt`
   * (always set). While one has not expired, `X-Signature` is signed with the oldest of them
   * and `X-Ferry-Signatures` carries every signature (docs/delivery.md). Only beside `sharedSecret`.
   */
  previousSharedSecrets?: Required<SigningSecret>[];
  /** When set, every request also carries the Standard Webhooks headers. */
  standardWebhooks?: StandardWebhooksSettings;
}
