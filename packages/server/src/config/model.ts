/**
 * The configuration model: what the config file holds after validation and `${VAR}`
 * expansion, and what the admin API edits at run time. Defaults live in `defaults.ts`.
 */
import type { RetentionSettings } from '../model/retention.js';

/** A source: a write key that clients send calls with. */
export interface SourceConfig {
  /** `[a-z0-9_-]+`, unique. */
  id: string;
  name: string;
  /** Secret: never logged, never returned by the admin API. */
  writeKey: string;
}

/**
 * A destination connected to one or more sources.
 *
 * @typeParam S Its settings, as its type's schema outputs them (`destinations/<type>/`).
 */
export interface DestinationConfig<S = unknown> {
  /** `[a-z0-9_-]+`, unique. */
  id: string;
  /**
   * Its destination type, by the name used in a call's `integrations` map (case-sensitive):
   * one the destination registry knows (`destinations/registry.ts`), such as `Webhooks`.
   */
  type: string;
  name: string;
  enabled: boolean;
  /** Ids of connected sources; each must exist. */
  sources: string[];
  /**
   * Which calls it gets (docs/configuration.md, "Filters"); absent, every call its
   * `integrations` map lets through. Deletion notices and audience changes are not filtered.
   */
  filter?: DestinationFilter;
  /**
   * Fields taken out of each call before its body is rendered (and so before it is signed),
   * e.g. `properties.email`, `traits.phone`, `context.ip`; absent or empty, none.
   */
  removeFields?: string[];
  settings: S;
  /** At most this many attempts a second, over every node of a cluster; none when absent (docs/delivery.md, "Rate limit"). */
  rateLimit?: RateLimit;
  /**
   * Disabled after failing this long without a single success; 0 never. Absent:
   * `defaultAutoDisableAfterMs` of `defaults.ts` (docs/delivery.md, "Auto-disable").
   */
  autoDisableAfterMs?: number;
  /**
   * The HTTP statuses an attempt retries (docs/delivery.md, "What is retried"); absent: the
   * defaults (`defaultRetryStatuses`: 408, 429 and every 5xx).
   */
  retryStatuses?: RetryStatus[];
  /**
   * The circuit breaker of each of its URLs, as configured: what it leaves out is the default
   * (`defaultCircuitBreakerSettings`, on), read when the breaker is used.
   */
  circuitBreaker?: Partial<CircuitBreakerSettings>;
}

/** A status that is retried: one status (`404`) or a whole class (`"5xx"`). */
export type RetryStatus = number | '3xx' | '4xx' | '5xx';

/**
 * When one URL of a destination is taken out of service, and how it comes back
 * (docs/delivery.md, "Circuit breaker").
 */
export interface CircuitBreakerSettings {
  /** Off: every URL is always attempted, as before the breaker existed. */
  enabled: boolean;
  /** This many failures in a row open the URL. */
  failures: number;
  /** A share of failures (0 to 1) over {@link windowMs} that opens the URL, once {@link minimumAttempts} were made in it. */
  failureRate: number;
  /** The window of {@link failureRate}. */
  windowMs: number;
  /** Exchanges in the window before {@link failureRate} counts. */
  minimumAttempts: number;
  /** How long an opened URL waits before its probe. */
  cooldownMs: number;
  /** Each failed probe multiplies the cool-down by this. */
  cooldownMultiplier: number;
  /** The cool-down grows up to this. */
  maxCooldownMs: number;
  /** After a successful probe, the URL's concurrency starts at 1 and doubles every this long, up to `perDestinationConcurrency`. */
  rampStepMs: number;
}

/** A destination's rate limit: a token bucket, refilled at `perSecond`, holding at most `burst`. */
export interface RateLimit {
  /** Attempts a second in the long run; may be a fraction (0.5: one every 2 s). */
  perSecond: number;
  /** Attempts that may go at once after a quiet time: the bucket's size. */
  burst: number;
}

/**
 * A destination's filter: a call is delivered when it matches `allow` (absent: every call)
 * and does not match `drop` (absent: no call). At least one of the two is given.
 */
export interface DestinationFilter {
  allow?: FilterCondition;
  drop?: FilterCondition;
}

/** A value a field condition compares with: a JSON scalar. */
export type FilterScalar = string | number | boolean | null;

/**
 * One condition of a filter, a mapping with exactly one of these keys: `all` (every listed
 * condition holds), `any` (at least one does), `not`, `type` (the call's type, or one of a
 * list), `event` (a track call's event name: exact, one of a list, or `{ prefix }`), or
 * `field` (a path into the call, with its operators).
 */
export type FilterCondition =
  | { all: FilterCondition[] }
  | { any: FilterCondition[] }
  | { not: FilterCondition }
  | { type: string | string[] }
  | { event: string | string[] | { prefix: string | string[] } }
  | FieldCondition;

/**
 * A condition on one field of the call, such as `properties.plan` or `context.app.version`:
 * every operator given must hold (`{ field, gte: 10, lt: 100 }` is a range).
 */
export interface FieldCondition {
  field: string;
  /** The value is this one (same JSON type: `"5"` is not `5`). */
  equals?: FilterScalar;
  /** The value is one of these. */
  in?: FilterScalar[];
  /** true: the field is there and not null; false: it is missing or null. */
  exists?: boolean;
  /** Numeric comparisons: the value is a number and compares so; anything else does not match. */
  gt?: number;
  gte?: number;
  lt?: number;
  lte?: number;
}

/** Retry schedule of webhook delivery: exponential backoff with jitter inside a window. */
export interface RetrySettings {
  /** Delay before the first retry. */
  initialDelayMs: number;
  /** Each further delay is the previous one times this. */
  multiplier: number;
  /** No delay before jitter is longer than this (with jitter 0.2 a capped delay lands between 0.8× and 1.2× of it). */
  maxDelayMs: number;
  /** Each delay is spread uniformly by ± this fraction (0.2 = ±20 %). */
  jitter: number;
  /** Retries stop this long after the first attempt; the event is then dead-lettered. */
  windowMs: number;
  /** A 429's Retry-After is honoured up to this delay. */
  maxRetryAfterMs: number;
}

/** Tuning of the delivery worker. */
export interface DeliverySettings {
  /** Each request must be answered within this time (the spec's 5 seconds). */
  timeoutMs: number;
  retry: RetrySettings;
  /** Attempts in flight at once, over all destinations. */
  concurrency: number;
  /** Attempts in flight at once for one destination, so a slow endpoint cannot take every slot. */
  perDestinationConcurrency: number;
  /**
   * Jobs claimed by one store round trip, and the most a destination holds ready. Unset: the
   * store's own ({@link Store.defaultClaimBatchSize}).
   */
  claimBatchSize?: number;
  /**
   * A claimed job returns to the queue if its worker has not finished it, nor renewed its
   * lease, within this time: how long a dead node's jobs wait before another takes them.
   */
  leaseMs: number;
  /** How often a worker renews the leases it holds (sending or ready); less than `leaseMs / 2`. */
  leaseRenewIntervalMs: number;
  /** How often the worker looks for due jobs when it has nothing to do. */
  pollIntervalMs: number;
}

/** Outbound network policy of the webhook sender. */
export interface NetworkSettings {
  /**
   * Let webhooks reach loopback and private addresses (`FERRY_ALLOW_PRIVATE_NETWORKS=1`). Link-local
   * addresses (cloud metadata), multicast and reserved ranges stay refused unless named in `allowedNetworks`.
   */
  allowPrivateNetworks: boolean;
  /** CIDR ranges reachable even while private networks are refused, e.g. `10.1.2.0/24`. */
  allowedNetworks: string[];
}

/** Tuning of the audience sync loop. */
export interface AudienceSettings {
  syncIntervalMs: number;
}

/** The whole validated configuration file. */
export interface FerryConfig {
  sources: SourceConfig[];
  destinations: DestinationConfig[];
  delivery: DeliverySettings;
  network: NetworkSettings;
  audiences: AudienceSettings;
  /**
   * The file's `retention:` section, its kinds over the defaults; absent when the file has
   * none. Applied to the store only when it changed since last applied (retention/retention-apply.ts).
   */
  retention?: RetentionSettings;
}
