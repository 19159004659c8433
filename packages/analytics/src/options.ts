import type { Clock } from './clock.js';
import { AnalyticsError } from './errors.js';
import type { Logger } from './logger.js';
import { type ResolvedSpoolOptions, resolveSpoolOptions, type SpoolOptions } from './spool/spool-options.js';
import type { Transport } from './transport/transport.js';

/** What to do with a new call when the queue is at its bound. */
export type OverflowPolicy = 'drop-oldest' | 'reject';

/**
 * Every default of the client, in one place. Sizes are bytes (1 KB = 1,000 bytes, the
 * stricter reading of the API's limits, so any Segment-compatible server accepts the batches),
 * durations are milliseconds.
 */
export const defaults = {
  /** Ferry's default local address. */
  endpoint: 'http://localhost:8080',
  /** Queued messages that trigger a flush, and the most one request carries; 1 sends every call on its own. */
  flushAt: 20,
  /** Period of the flush: queued messages are sent once this long has passed since the last flush. */
  flushAfterMs: 5_000,
  /** Largest request body (the API's 500 KB). */
  maxBatchBytes: 500_000,
  /** Largest serialised message (the API's 32 KB). */
  maxMessageBytes: 32_000,
  /** Requests in flight at once; further full batches wait in the queue. */
  maxInFlight: 4,
  /** Bound on messages waiting to be sent. */
  maxQueueMessages: 100_000,
  /** Bound on the serialised size of messages waiting to be sent (64 MB). */
  maxQueueBytes: 64_000_000,
  /** Policy when a bound is reached. */
  overflow: 'drop-oldest' as OverflowPolicy,
  /** One attempt's time limit, connection to last response byte. */
  requestTimeoutMs: 10_000,
  /** Retries after the first attempt. */
  maxRetries: 10,
  /** First retry delay; doubles per retry, with jitter. */
  retryBaseDelayMs: 100,
  /** Ceiling of the exponential retry delay. */
  retryMaxDelayMs: 10_000,
  /** Ceiling of a server's Retry-After. */
  retryAfterMaxMs: 60_000,
  /** Gzip request bodies (`Content-Encoding: gzip`). */
  gzip: false,
} as const;

/**
 * Settings of {@link Analytics}. Every field is optional except `writeKey` (which may also be
 * given as the constructor's first argument). Unknown keys are refused so a typo does not
 * silently keep a default.
 */
export interface AnalyticsOptions {
  /** The source's write key; sent as the Basic auth user name. */
  writeKey?: string;
  /** Base URL of the API; requests go to `{endpoint}/v1/batch`. Default `http://localhost:8080`. */
  endpoint?: string;
  /** Segment's name for `endpoint`, accepted so switching from `@segment/analytics-node` is one line. */
  host?: string;
  /**
   * Queued messages that trigger a flush, and the most messages one request carries (1 to
   * 2,500, the API's limit). Default 20; 1 sends every call in its own request.
   */
  flushAt?: number;
  /** The spec's other name for `flushAt`. */
  size?: number;
  /**
   * Period of the flush in ms: what is queued is sent once this long has passed since the last
   * flush, whatever triggered that one. Default 5,000.
   */
  flushAfterMs?: number;
  /** The spec's name for `flushAfterMs`; also in milliseconds. */
  flushAfter?: number;
  /** Largest request body in bytes, envelope included. Default 500,000. */
  maxBatchBytes?: number;
  /** Largest serialised message in bytes; larger calls are refused. Default 32,000. */
  maxMessageBytes?: number;
  /** Requests in flight at once. Default 4. */
  maxInFlight?: number;
  /** Bound on queued (not yet sent) messages. Default 100,000. */
  maxQueueMessages?: number;
  /** Bound on the serialised size of queued messages, in bytes. Default 64,000,000. */
  maxQueueBytes?: number;
  /** At the bound: drop the oldest queued message (default) or refuse the new call. */
  overflow?: OverflowPolicy;
  /** Time limit of one attempt in ms. Default 10,000. */
  requestTimeoutMs?: number;
  /** Retries after the first attempt. Default 10. */
  maxRetries?: number;
  /** First retry delay in ms, doubled per retry, with jitter. Default 100. */
  retryBaseDelayMs?: number;
  /** Ceiling of the retry delay in ms. Default 10,000. */
  retryMaxDelayMs?: number;
  /** Ceiling of a server's Retry-After in ms. Default 60,000. */
  retryAfterMaxMs?: number;
  /** Gzip request bodies. Default false. */
  gzip?: boolean;
  /**
   * How requests are sent: a {@link Transport}, or `'fetch'` for the standard `fetch`.
   * Default: in Node, keep-alive sockets (`node:net`, `node:https`); in the edge entry, `fetch`.
   */
  transport?: Transport | 'fetch';
  /** Where logs go. Default: stderr when `DEBUG` contains `analytics`, else nothing. */
  logger?: Logger;
  /** Time source and timers; for tests. */
  clock?: Clock;
  /** Random numbers in [0, 1) for retry jitter; for tests. */
  random?: () => number;
  /**
   * Keep every accepted call in a journal on disk until the server confirms it, and send again
   * at the next start what was not confirmed. Off by default; see the README's "Durable spool".
   */
  spool?: SpoolOptions;
}

/** Options after defaults, aliases and checks. */
export interface ResolvedOptions {
  writeKey: string;
  batchUrl: string;
  flushAt: number;
  flushAfterMs: number;
  maxBatchBytes: number;
  maxMessageBytes: number;
  maxInFlight: number;
  maxQueueMessages: number;
  maxQueueBytes: number;
  overflow: OverflowPolicy;
  requestTimeoutMs: number;
  maxRetries: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  retryAfterMaxMs: number;
  gzip: boolean;
  transport: Transport | 'fetch' | undefined;
  logger: Logger | undefined;
  clock: Clock | undefined;
  random: (() => number) | undefined;
  spool: ResolvedSpoolOptions | undefined;
}

const integerOptions = {
  flushAt: 1,
  flushAfterMs: 1,
  maxBatchBytes: 1_000,
  maxMessageBytes: 1,
  maxInFlight: 1,
  maxQueueMessages: 1,
  maxQueueBytes: 1,
  requestTimeoutMs: 1,
  maxRetries: 0,
  retryBaseDelayMs: 0,
  retryMaxDelayMs: 0,
  retryAfterMaxMs: 0,
} as const;

// flushAt caps every batch, so it cannot exceed what the ingestion API accepts per request.
const maxFlushAt = 2_500;

const aliases = { size: 'flushAt', flushAfter: 'flushAfterMs', host: 'endpoint' } as const;
const otherKeys = ['writeKey', 'endpoint', 'overflow', 'gzip', 'transport', 'logger', 'clock', 'random', 'spool'];
const knownKeys = new Set<string>([...Object.keys(integerOptions), ...Object.keys(aliases), ...otherKeys]);

function fail(message: string): never {
  throw new AnalyticsError('invalid_option', message);
}

/** Applies defaults and aliases and checks every value; throws `invalid_option`. */
export function resolveOptions(input: AnalyticsOptions): ResolvedOptions {
  const raw: Record<string, unknown> = { ...input };
  for (const key of Object.keys(raw)) {
    if (!knownKeys.has(key)) fail(`Unknown option \`${key}\`.`);
    if (raw[key] === undefined) delete raw[key];
  }
  for (const [alias, name] of Object.entries(aliases)) {
    if (alias in raw) {
      if (name in raw && raw[name] !== raw[alias]) fail(`\`${alias}\` and \`${name}\` are the same setting; give one.`);
      raw[name] = raw[alias];
    }
  }

  const writeKey = raw['writeKey'];
  if (typeof writeKey !== 'string' || writeKey.length === 0) fail('A non-empty `writeKey` is required.');

  const ints = {} as Record<keyof typeof integerOptions, number>;
  for (const [key, min] of Object.entries(integerOptions) as [keyof typeof integerOptions, number][]) {
    const v = raw[key] ?? defaults[key];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) fail(`\`${key}\` must be an integer >= ${min}.`);
    ints[key] = v;
  }
  if (ints.flushAt > maxFlushAt) fail(`\`flushAt\` must be at most ${maxFlushAt}, the most messages the API takes in one request.`);
  if (ints.maxMessageBytes > ints.maxBatchBytes - 64) fail('`maxMessageBytes` must leave room for the batch envelope.');

  const endpoint = raw['endpoint'] ?? defaults.endpoint;
  if (typeof endpoint !== 'string') fail('`endpoint` must be a URL string.');
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    fail(`\`endpoint\` is not a URL: ${endpoint}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail('`endpoint` must be an http or https URL.');
  const batchUrl = `${url.origin}${url.pathname.replace(/\/+$/, '')}/v1/batch${url.search}`;

  const overflow = raw['overflow'] ?? defaults.overflow;
  if (overflow !== 'drop-oldest' && overflow !== 'reject') fail('`overflow` must be "drop-oldest" or "reject".');
  const gzip = raw['gzip'] ?? defaults.gzip;
  if (typeof gzip !== 'boolean') fail('`gzip` must be a boolean.');
  const transport = raw['transport'];
  if (transport === 'fetch') {
    if (typeof globalThis.fetch !== 'function') fail('`transport: "fetch"` needs a global `fetch`.');
  } else if (transport !== undefined && (transport === null || typeof transport !== 'object')) {
    fail('`transport` must be a transport object or "fetch".');
  }
  for (const key of ['logger', 'clock'] as const) {
    if (raw[key] !== undefined && (raw[key] === null || typeof raw[key] !== 'object')) fail(`\`${key}\` must be an object.`);
  }
  if (raw['random'] !== undefined && typeof raw['random'] !== 'function') fail('`random` must be a function.');

  return {
    writeKey,
    batchUrl,
    ...ints,
    overflow,
    gzip,
    transport: raw['transport'] as Transport | 'fetch' | undefined,
    logger: raw['logger'] as Logger | undefined,
    clock: raw['clock'] as Clock | undefined,
    random: raw['random'] as (() => number) | undefined,
    spool: raw['spool'] === undefined ? undefined : resolveSpoolOptions(raw['spool']),
  };
}
