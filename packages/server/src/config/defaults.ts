/**
 * Every default of the configuration, defined once and typed by the model. The schema
 * merges a file's partial `delivery`, `network` and `audiences` sections over these; the
 * rest of the server reads the merged values and never hard-codes its own.
 *
 * The objects are frozen so that no caller can change a default for everyone by mutating
 * what it was handed; the schema always returns fresh copies.
 */
import type { AudienceSettings, CircuitBreakerSettings, DeliverySettings, NetworkSettings, RetrySettings, RetryStatus } from './model.js';

/** Retry schedule of webhook delivery when the file says nothing. */
export const defaultRetrySettings: RetrySettings = Object.freeze({
  // Long enough for a restarting receiver to come back, short enough that a blip is invisible.
  initialDelayMs: 2_000,
  // Doubling reaches the cap in about 8 steps: a few quick retries, then patient ones.
  multiplier: 2,
  // 5 minutes: an endpoint that is down for hours is still tried about every 5 minutes,
  // so it recovers within minutes of coming back rather than after a huge backoff step.
  maxDelayMs: 300_000,
  // ±20 % spreads the retries of a burst that failed together, so they do not return together.
  jitter: 0.2,
  // 4 hours after the first attempt: the spec's maximum retry duration for 5xx answers.
  windowMs: 14_400_000,
  // 1 hour: a receiver may slow us down with Retry-After, but not park an event for a day.
  maxRetryAfterMs: 3_600_000,
});

/** Delivery worker tuning when the file says nothing. */
export const defaultDeliverySettings: DeliverySettings = Object.freeze({
  // The spec: "The endpoint must respond within 5 seconds".
  timeoutMs: 5_000,
  retry: defaultRetrySettings,
  // Attempts are I/O-bound; 64 in flight keeps a single node busy without exhausting sockets.
  concurrency: 64,
  // A quarter of the slots: one slow or dead endpoint cannot starve every other destination.
  perDestinationConcurrency: 16,
  // claimBatchSize is left to the store (Store.defaultClaimBatchSize) unless the file sets it.
  // 12 s: at least 2 × timeoutMs + 1000 (one attempt, its body, its record), and short, so a
  // dead node's jobs come back within 15 s; a live worker renews its leases (below).
  leaseMs: 12_000,
  // A third of the lease: two renewals may fail in a row (a slow store) before a lease runs out.
  leaseRenewIntervalMs: 4_000,
  // 250 ms: a new event waits at most a quarter second while the worker is idle, at the
  // cost of four cheap queries per second.
  pollIntervalMs: 250,
});

/** Outbound network policy when neither the file nor the environment says otherwise. */
export const defaultNetworkSettings: NetworkSettings = Object.freeze({
  // Off: a webhook URL is user input, and reaching loopback or the private network from
  // the server (SSRF) must be an explicit choice (`FERRY_ALLOW_PRIVATE_NETWORKS=1`).
  allowPrivateNetworks: false,
  // Empty: no private range is trusted until the operator names it.
  allowedNetworks: Object.freeze([]) as unknown as string[],
});

/** Audience sync loop tuning when the file says nothing. */
export const defaultAudienceSettings: AudienceSettings = Object.freeze({
  // 1 minute: membership changes reach destinations quickly without recomputing constantly.
  syncIntervalMs: 60_000,
});

/** Defaults of a destination's own keys. */
export const defaultDestinationEnabled = true;

/**
 * The statuses retried when a destination does not list its own: the spec's 5xx, and the two
 * 4xx that mean "later" (408, 429). Every other status dead-letters at once.
 */
export const defaultRetryStatuses: readonly RetryStatus[] = Object.freeze([408, 429, '5xx'] as RetryStatus[]);

/** A destination's circuit breaker when it does not set its own (docs/delivery.md, "Circuit breaker"). */
export const defaultCircuitBreakerSettings: CircuitBreakerSettings = Object.freeze({
  // On: it only acts on a URL that is failing, and what it costs then is delay, never an event.
  enabled: true,
  // 5 in a row: a blip (a restart, one bad node behind a balancer) rarely fails 5 requests running.
  failures: 5,
  // Half of the last minute's exchanges, once there were 20: a receiver failing every other
  // request is in trouble even if a success breaks each run.
  failureRate: 0.5,
  windowMs: 60_000,
  minimumAttempts: 20,
  // 30 s, doubling after each failed probe up to 5 min: a receiver down for an hour gets about
  // fifteen probes from each node instead of every pending event on its own backoff, and one
  // that is back is found no later than the retry schedule (capped at 5 min too) would find it.
  cooldownMs: 30_000,
  cooldownMultiplier: 2,
  maxCooldownMs: 300_000,
  // 1, 2, 4, 8, 16 in flight a second apart: a receiver just back gets a few seconds to warm up
  // before the backlog arrives at full concurrency.
  rampStepMs: 1_000,
});

/**
 * Defaults of the process itself (command line and environment), listed here so that the
 * CLI and the docs share one source. See `docs/configuration.md`.
 */
export const defaultProcessSettings = Object.freeze({
  /** Read when neither `--config` nor `FERRY_CONFIG` is given. */
  configFile: 'ferry.config.yaml',
  /** `PORT`. */
  port: 8080,
  /** `FERRY_DATA_DIR`: the SQLite database lives here. */
  dataDir: './.ferry',
  /** `FERRY_LOG_LEVEL`: a pino level. */
  logLevel: 'info',
  /**
   * `--drain-ms`, `FERRY_DRAIN_MS`: after SIGTERM the listener answers new requests 503 for
   * at least this long. 5 s: a few probe periods of a load balancer's readiness check, and
   * well inside Kubernetes' 30 s before SIGKILL.
   */
  drainMs: 5_000,
  /** `--host`, `HOST`: every interface (the demo, `ferry dev`, binds loopback only). */
  host: '0.0.0.0',
});

/**
 * The write key of the repository's demo configuration (`ferry.config.yaml`). It is public,
 * so `ferry serve` refuses to listen beyond loopback while a source uses it.
 */
export const demoWriteKey = 'demo-write-key';

/**
 * Limits of the HTTP server against slow and idle clients. Real clients send a request in
 * milliseconds; these only bound what a broken or hostile one can hold.
 */
export const defaultHttpServerSettings = Object.freeze({
  /** Whole request head must arrive within this time. */
  headersTimeoutMs: 20_000,
  /** Whole request (head and body) must arrive within this time. */
  requestTimeoutMs: 30_000,
  /** Once the head is in, the body must be complete within this time, however slowly it trickles. */
  bodyTimeoutMs: 15_000,
  /** An idle keep-alive connection is closed after this time (above common client pools' 4-5 s). */
  keepAliveTimeoutMs: 65_000,
  /** How often the server looks for requests past their deadlines. */
  connectionsCheckingIntervalMs: 2_000,
  /** Open connections at most; further ones are refused at once. */
  maxConnections: 10_000,
  /**
   * Open connections from one client address at most (`FERRY_MAX_CONNECTIONS_PER_ADDRESS`);
   * further ones are closed at once. 0 turns the limit off (behind a reverse proxy, every
   * connection comes from the proxy's address). Far above what a client's pool opens, far
   * below `maxConnections`, so one address cannot take every socket.
   */
  maxConnectionsPerAddress: 1_000,
  /**
   * Bytes of ingestion request bodies held at once, over all requests
   * (`FERRY_INGEST_BODY_BUDGET_BYTES`); past it, new ingestion requests are answered 503
   * `server_busy`. 64 MiB holds 128 bodies of the 500 KB limit at once, many more of the few
   * KB real batches weigh, and bounds what clients can make the process hold.
   */
  ingestBodyBudgetBytes: 64 * 1024 * 1024,
});

/** Limits of the HTTP server; see {@link defaultHttpServerSettings}. */
export type HttpServerSettings = { -readonly [K in keyof typeof defaultHttpServerSettings]: number };

/**
 * A destination failing without a single success for this long is disabled (3 days), unless its
 * `autoDisableAfterMs` says otherwise: long enough to outlast a weekend's outage of a receiver
 * someone watches, short enough that a receiver nobody watches stops costing retries.
 */
export const defaultAutoDisableAfterMs = 3 * 86_400_000;
