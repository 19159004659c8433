/**
 * The vocabulary of a delivery attempt: what a destination type reports of each exchange,
 * what the retry policy decides, and what the store records. It lives below the stages that
 * speak it (store, destinations, delivery) and imports nothing, so none of them reaches up
 * into another for a word.
 */

/**
 * What happened to one exchange of an attempt: one request to one target (a webhook URL).
 * Always a value: a destination type reports a failure here rather than throwing.
 */
export interface ExchangeResult {
  /** The target, as the attempt log shows it once redacted (for Webhooks, the URL). */
  url: string;
  /** When the exchange started, ms since the epoch (from the injected clock). */
  startedAtMs: number;
  latencyMs: number;
  /** Present when a response arrived. */
  statusCode?: number;
  /** Present when the exchange did not end in a 2xx. */
  errorClass?: ErrorClass;
  errorMessage?: string;
  /** The first KB of the response body, decoded as UTF-8 (lossy). */
  responseBody?: string;
  /** From a `Retry-After` header (seconds or HTTP date), in ms from now. */
  retryAfterMs?: number;
}

/** Why an attempt failed, as recorded in the attempt log. */
export type ErrorClass =
  | 'dns' // the host name did not resolve
  | 'connect' // TCP connection refused, reset or unreachable
  | 'tls' // handshake failed: self-signed or untrusted certificate, wrong host name
  | 'timeout' // no complete response head within the time limit
  | 'http' // a response arrived with a non-2xx status (3xx included: redirects are not followed)
  | 'ssrf' // the destination resolved to an address the SSRF guard refuses
  | 'invalid_url' // the URL cannot be requested at all
  | 'protocol' // anything else the transport raised (malformed response, socket closed mid-way)
  | 'circuit_open'; // not sent: the URL's circuit breaker is open (or its probe is in flight)

/** An attempt is `scheduled` by the retry policy or `manual` after a replay. */
export type AttemptTrigger = 'scheduled' | 'manual';

/** One POST to one URL, as logged. */
export interface AttemptRecord {
  url: string;
  startedAtMs: number;
  latencyMs: number;
  statusCode: number | null;
  errorClass: ErrorClass | null;
  errorMessage: string | null;
  responseBody: string | null;
  trigger: AttemptTrigger;
}

/** Why a delivery was dead-lettered. */
export type DeadReason = 'retry_window_exhausted' | 'non_retryable_response' | 'destination_deleted';

/** How one delivery attempt (to every URL of the destination) ended. */
export type AttemptOutcome =
  { status: 'succeeded' } | { status: 'pending'; nextAttemptAtMs: number; lastError: string } | { status: 'dead'; reason: DeadReason; lastError: string };
