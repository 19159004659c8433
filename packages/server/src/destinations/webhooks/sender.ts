/**
 * The transport contract between the delivery worker and the HTTP layer: one POST to one
 * URL, whose outcome is always a value (never a thrown error).
 */

/** Why an attempt failed, as recorded in the attempt log. */
export type ErrorClass =
  | 'dns' // the host name did not resolve
  | 'connect' // TCP connection refused, reset or unreachable
  | 'tls' // handshake failed: self-signed or untrusted certificate, wrong host name
  | 'timeout' // no complete response head within the time limit
  | 'http' // a response arrived with a non-2xx status (3xx included: redirects are not followed)
  | 'ssrf' // the destination resolved to an address the SSRF guard refuses
  | 'invalid_url' // the URL cannot be requested at all
  | 'protocol'; // anything else the transport raised (malformed response, socket closed mid-way)

/** One POST to one URL. */
export interface SendRequest {
  url: string;
  /** Final header set, already including Content-Type, User-Agent, X-Signature, X-Ferry-Source and static headers. */
  headers: Record<string, string>;
  /** The exact bytes to send. */
  body: Buffer;
  /** The whole exchange up to the response head must finish within this time. */
  timeoutMs: number;
}

/** What happened to one POST. */
export interface SendResult {
  url: string;
  /** When the attempt started, ms since the epoch (from the injected clock). */
  startedAtMs: number;
  latencyMs: number;
  /** Present when a response arrived. */
  statusCode?: number;
  /** Present when the attempt did not end in a 2xx. */
  errorClass?: ErrorClass;
  errorMessage?: string;
  /** The first KB of the response body, decoded as UTF-8 (lossy). */
  responseBody?: string;
  /** From a `Retry-After` header (seconds or HTTP date), in ms from now. */
  retryAfterMs?: number;
}

/** Sends webhook requests; one instance per process, with its own connection pools. */
export interface WebhookSender {
  send(request: SendRequest): Promise<SendResult>;
  close(): Promise<void>;
}
