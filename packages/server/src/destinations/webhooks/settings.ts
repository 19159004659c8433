/** What a Webhooks destination is configured with. */

/** One endpoint of a Webhooks destination. */
export interface WebhookEntry {
  /** A full http:// or https:// URL. */
  url: string;
  /** At most 5 static headers; names cannot override Content-Type, Content-Length, Host, User-Agent or X-Signature. */
  headers: Record<string, string>;
}

/** Settings of a destination of type `Webhooks`, after the single `webhookUrl` form has been folded into `webhooks`. */
export interface WebhooksSettings {
  /** 1 to 5 entries. */
  webhooks: WebhookEntry[];
  /** When set, every request carries X-Signature. Secret: never logged, never returned by the admin API. */
  sharedSecret?: string;
}
