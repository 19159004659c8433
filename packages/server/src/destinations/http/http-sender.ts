/**
 * The production WebhookSender: undici keep-alive pools behind the SSRF guard. One POST per
 * call, no redirects, verified TLS, a hard time limit up to the response head, and a small,
 * bounded read of the response body for the attempt log.
 */
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { Agent, type Dispatcher } from 'undici';
import { systemClock, systemTimers, type Clock, type TimerHandle, type Timers } from '../../util/clock.js';
import type { ErrorClass } from '../../model/attempt.js';
import type { SendRequest, SendResult, WebhookSender } from './sender.js';
import { createGuardedLookup, refusalReason, SSRF_REFUSED, type NetworkPolicy } from './ssrf-guard.js';

/** Options of {@link createHttpSender}. */
export interface HttpSenderOptions extends NetworkPolicy {
  /**
   * Extra trusted root certificates (PEM), e.g. a company CA, trusted in addition to Node's
   * bundled roots. There is no option to skip verification.
   */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Open connections kept per origin (scheme, host, port). Default {@link DEFAULT_CONNECTIONS_PER_ORIGIN}. */
  connectionsPerOrigin?: number;
  /** Source of `startedAtMs`, `latencyMs` and the reference time for `Retry-After` dates. */
  clock?: Clock;
  /**
   * The timers of the time limits (`timeoutMs`, the response body's wait). Default Node's;
   * tests pass a manual clock's, so that a limit is reached when the test moves that clock.
   */
  timers?: Timers;
  /**
   * After the response head, how long the body may take to arrive (capped by the request's
   * `timeoutMs`); past it the status stands and the socket is dropped. Default
   * {@link RESPONSE_BODY_WAIT_MS}.
   */
  responseBodyWaitMs?: number;
}

/** Default bound on concurrent connections to one receiver, so one slow receiver cannot take every socket. */
export const DEFAULT_CONNECTIONS_PER_ORIGIN = 8;
/** How much of a response body is kept for the attempt log. */
export const RESPONSE_BODY_LIMIT_BYTES = 1024;
/** After the head, how long the body may take to deliver its first KB (capped by the request's timeoutMs). */
export const RESPONSE_BODY_WAIT_MS = 1000;
/** Discarding at most this much of the rest keeps the connection reusable; beyond it, the socket is dropped. */
const RESPONSE_DRAIN_LIMIT_BYTES = 64 * 1024;
/** Idle keep-alive sockets are closed after this long, below typical server-side idle timeouts (5 s for Node). */
const KEEP_ALIVE_TIMEOUT_MS = 4000;

// Headers the transport owns: framing and connection management are computed by undici, and
// Host always comes from the URL so a static header cannot route the request elsewhere.
const TRANSPORT_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'upgrade',
  'te',
  'trailer',
  'expect',
]);

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME']);
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'EPIPE',
  'UND_ERR_SOCKET',
]);
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
// OpenSSL verification codes (DEPTH_ZERO_SELF_SIGNED_CERT, CERT_HAS_EXPIRED, ...) and Node's TLS/SSL codes.
const TLS_CODE =
  /^(ERR_TLS_|ERR_SSL_|ERR_OSSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|HOSTNAME_MISMATCH$|INVALID_CA$|PATH_LENGTH_EXCEEDED$|INVALID_PURPOSE$)/;

/**
 * Creates the HTTP transport of the Webhooks destination.
 *
 * Every connection's host name goes through the SSRF guard's DNS lookup, so the address
 * dialled is the one vetted; IP-literal URLs (for which Node skips the lookup) are vetted
 * before connecting. Redirects are never followed: a 3xx is a failure of class `http`.
 * `send()` never throws. Throws only for misuse: a malformed `allowedNetworks` entry, a
 * non-positive `connectionsPerOrigin` or `responseBodyWaitMs`.
 *
 * @example
 * ```ts
 * const sender = createHttpSender({ allowPrivateNetworks: false, allowedNetworks: [] });
 * const result = await sender.send({
 *   url: 'https://hooks.example.com/ferry',
 *   headers: { 'Content-Type': 'application/json', 'User-Agent': 'Ferry/0.1.0' },
 *   body: Buffer.from('{"version":1,"type":"track"}'),
 *   timeoutMs: 5000,
 * });
 * if (result.errorClass) console.warn(result.errorClass, result.statusCode, result.errorMessage);
 * await sender.close();
 * ```
 */
export function createHttpSender(options: HttpSenderOptions): WebhookSender {
  const clock = options.clock ?? systemClock;
  const timers = options.timers ?? systemTimers;
  const policy: NetworkPolicy = {
    allowPrivateNetworks: options.allowPrivateNetworks,
    allowedNetworks: [...options.allowedNetworks],
  };
  const connections = options.connectionsPerOrigin ?? DEFAULT_CONNECTIONS_PER_ORIGIN;
  const bodyWaitMs = options.responseBodyWaitMs ?? RESPONSE_BODY_WAIT_MS;
  if (!(bodyWaitMs > 0)) throw new RangeError(`responseBodyWaitMs must be positive, got ${String(options.responseBodyWaitMs)}`);
  if (!Number.isSafeInteger(connections) || connections < 1) {
    throw new RangeError(`connectionsPerOrigin must be a positive integer, got ${String(options.connectionsPerOrigin)}`);
  }

  const agent = new Agent({
    connections,
    pipelining: 1,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connect: {
      lookup: createGuardedLookup(policy),
      rejectUnauthorized: true,
      // tls.connect({ ca }) replaces the bundled roots; keep them so public receivers still verify.
      ...(options.ca === undefined ? {} : { ca: [...rootCertificates, ...[options.ca].flat()] }),
    },
  });
  let closed = false;
  // Parsed and vetted once per URL string: the policy is fixed for the sender's life.
  const targets = new TargetCache(policy);

  // Not async: a request that can be sent goes straight to its exchange, one promise in all.
  function send(request: SendRequest): Promise<SendResult> {
    const startedAtMs = clock.now();
    const fail = (errorClass: ErrorClass, errorMessage: string): Promise<SendResult> =>
      Promise.resolve({
        url: request.url,
        startedAtMs,
        latencyMs: clock.now() - startedAtMs,
        errorClass,
        errorMessage,
      });

    if (closed) return fail('protocol', 'the sender is closed');
    const target = targets.get(request.url);
    if (typeof target === 'string') return fail('invalid_url', target);
    if (target.refusal !== undefined) return fail('ssrf', `refused to connect to ${target.address}: ${target.refusal}`);

    return exchange(agent, target, request, startedAtMs, clock, timers, bodyWaitMs);
  }

  return {
    send(request) {
      try {
        return send(request);
      } catch (error) {
        // Nothing above should throw (the exchange's promise never rejects); this keeps the
        // "always a value" contract if something does.
        return Promise.resolve({
          url: request.url,
          startedAtMs: clock.now(),
          latencyMs: 0,
          errorClass: 'protocol',
          errorMessage: describe(error),
        });
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await agent.close();
    },
  };
}

interface Target {
  url: URL;
  /** Host name without URL brackets; an IP literal or a DNS name. */
  address: string;
}

/** A URL ready to request: where to, and whether the SSRF guard refuses its IP literal. */
interface CachedTarget {
  origin: string;
  path: string;
  address: string;
  /** Why the guard refuses an IP-literal host (Node skips the DNS lookup for those), if it does. */
  refusal: string | undefined;
}

/** URLs seen before; cleared when it grows past this many (URLs come from the catalog, so rarely). */
const TARGET_CACHE_LIMIT = 1024;

/** {@link parseTarget} and the IP-literal SSRF verdict, memoised per URL string. */
class TargetCache {
  private readonly cache = new Map<string, CachedTarget | string>();
  constructor(private readonly policy: NetworkPolicy) {}

  get(raw: string): CachedTarget | string {
    let entry = this.cache.get(raw);
    if (entry === undefined) {
      const t = parseTarget(raw);
      entry =
        typeof t === 'string'
          ? t
          : {
              origin: t.url.origin,
              path: `${t.url.pathname}${t.url.search}`,
              address: t.address,
              refusal: isIP(t.address) ? refusalReason(t.address, this.policy) : undefined,
            };
      if (this.cache.size >= TARGET_CACHE_LIMIT) this.cache.clear();
      this.cache.set(raw, entry);
    }
    return entry;
  }
}

/** The URL to request, or why it cannot be requested. */
function parseTarget(raw: string): Target | string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `not a valid URL: ${JSON.stringify(raw)}`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `unsupported scheme ${url.protocol} (http or https only)`;
  // undici would silently drop them; sending without the credentials the operator wrote is worse than refusing.
  if (url.username || url.password) return 'credentials in the URL are not supported; use a static Authorization header';
  const address = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (address === '') return 'URL has no host';
  return { url, address };
}

/** Whether a header name, as spelled, is one the transport owns; remembered per spelling. */
const ownedByTransport = new Map<string, boolean>();
/** Spellings remembered at most; the names come from the configuration, so few. */
const OWNED_CACHE_LIMIT = 1024;

function isTransportHeader(name: string): boolean {
  let owned = ownedByTransport.get(name);
  if (owned === undefined) {
    owned = TRANSPORT_HEADERS.has(name.toLowerCase());
    if (ownedByTransport.size >= OWNED_CACHE_LIMIT) ownedByTransport.clear();
    ownedByTransport.set(name, owned);
  }
  return owned;
}

/** The headers without those the transport owns; the same object when there are none (undici only reads it). */
function transportHeaders(headers: Record<string, string>): Record<string, string> {
  let any = false;
  for (const name in headers) if (isTransportHeader(name)) any = true;
  if (!any) return headers;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!isTransportHeader(name)) out[name] = value;
  }
  return out;
}

/** One decoder for every response (decoding is synchronous, so calls never interleave). */
const utf8 = new TextDecoder('utf-8');

/**
 * One request through undici's handler interface, the layer under `request()`: no response
 * stream, promise or header object is built for a response that needs none (a 2xx needs
 * neither its headers nor more than 1 KB of its body). Resolves, never rejects.
 *
 * Deadlines: the response head within `timeoutMs` of the start (queueing for a connection
 * included); then up to 1 KB of body is kept and up to 64 KB more discarded so the
 * connection can be reused, within `bodyWaitMs` and never past `timeoutMs` from the start
 * (a body longer than that is cut, its socket dropped); informational (1xx)
 * heads are not the response and change nothing;
 * past either limit the socket is dropped, so a receiver that trickles cannot hold a worker.
 */
function exchange(
  agent: Dispatcher,
  target: CachedTarget,
  request: SendRequest,
  startedAtMs: number,
  clock: Clock,
  timers: Timers,
  bodyWaitMs: number,
): Promise<SendResult> {
  return new Promise<SendResult>((resolve) => {
    let abort: ((reason: Error) => void) | undefined;
    let statusCode: number | undefined;
    let latencyMs = 0;
    let rawHeaders: Buffer[] | undefined;
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let seenBytes = 0;
    let done = false;
    let timedOut = false;

    const finish = (): void => {
      if (done) return;
      done = true;
      timers.clearTimeout(timer);
      if (statusCode === undefined) return;
      const result: SendResult = { url: request.url, startedAtMs, latencyMs, statusCode };
      if (keptBytes > 0) {
        const bytes = kept.length === 1 ? kept[0]! : Buffer.concat(kept, keptBytes);
        let text: string;
        if (seenBytes === keptBytes) {
          // The whole body (the common case: a short answer, with the head): Buffer's own UTF-8
          // decoding, which costs a fraction of a TextDecoder call and replaces bad bytes alike.
          text = bytes.toString('utf8');
        } else {
          // Cut at the limit: stream: true holds back a multi-byte character cut there instead
          // of emitting U+FFFD; the final decode() then drops it, so the decoder starts clean.
          text = utf8.decode(bytes, { stream: true });
          utf8.decode();
        }
        if (text.length > 0) result.responseBody = text;
      }
      if (statusCode < 200 || statusCode > 299) {
        const retryAfterMs = parseRetryAfter(headerValue(rawHeaders, 'retry-after'), clock.now());
        if (retryAfterMs !== undefined) result.retryAfterMs = retryAfterMs;
        result.errorClass = 'http';
        const location = headerValue(rawHeaders, 'location');
        result.errorMessage =
          statusCode >= 300 && statusCode < 400 ? `HTTP ${statusCode}: redirect${location ? ` to ${location}` : ''} not followed` : `HTTP ${statusCode}`;
      }
      resolve(result);
    };
    const fail = (errorClass: ErrorClass, errorMessage: string): void => {
      if (done) return;
      done = true;
      timers.clearTimeout(timer);
      resolve({ url: request.url, startedAtMs, latencyMs: clock.now() - startedAtMs, errorClass, errorMessage });
    };
    const giveUp = (): void => {
      timedOut = true;
      // Before the head this is a timeout; after it the status stands and the socket goes.
      if (statusCode === undefined) fail('timeout', `no response head within ${request.timeoutMs} ms`);
      else finish();
      abort?.(Object.assign(new Error('the webhook exchange ran out of time'), { name: 'TimeoutError', code: 'ETIMEDOUT' }));
    };
    let timer: TimerHandle = timers.setTimeout(giveUp, request.timeoutMs);

    const handler = {
      onConnect(abortRequest: (reason: Error) => void) {
        abort = abortRequest;
        if (timedOut) abortRequest(new Error('the webhook exchange ran out of time'));
      },
      onHeaders(code: number, headers: Buffer[]) {
        if (code < 200) return true;
        statusCode = code;
        rawHeaders = headers;
        latencyMs = clock.now() - startedAtMs;
        timers.clearTimeout(timer);
        // A small body usually arrives with the head, in the same parser pass: the body's
        // own deadline is only set if it is still missing once that pass is over.
        // Its deadline is the body wait, but never past timeoutMs from the start: the whole
        // exchange, body included, ends within timeoutMs, however late the head came.
        queueMicrotask(() => {
          if (done) return;
          const leftMs = request.timeoutMs - (clock.now() - startedAtMs);
          if (leftMs <= 0) giveUp();
          else timer = timers.setTimeout(giveUp, Math.min(bodyWaitMs, leftMs));
        });
        return true;
      },
      onData(chunk: Buffer) {
        seenBytes += chunk.length;
        if (keptBytes < RESPONSE_BODY_LIMIT_BYTES) {
          const part = chunk.subarray(0, RESPONSE_BODY_LIMIT_BYTES - keptBytes);
          kept.push(Buffer.from(part));
          keptBytes += part.length;
        }
        if (seenBytes > RESPONSE_BODY_LIMIT_BYTES + RESPONSE_DRAIN_LIMIT_BYTES) {
          finish();
          abort?.(new Error('response body too large to drain'));
          return false;
        }
        return true;
      },
      onComplete() {
        finish();
      },
      onError(error: Error) {
        // Errors after the head do not change the outcome: the status already arrived.
        if (statusCode !== undefined) return finish();
        fail(classify(error), describe(error));
      },
    } as unknown as Dispatcher.DispatchHandler;
    // undici reports a refused dispatch through onError; a throw is caught all the same, since
    // this promise must resolve, never reject.
    try {
      agent.dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: 'POST',
          headers: transportHeaders(request.headers),
          body: request.body,
        },
        handler,
      );
    } catch (error) {
      fail('protocol', describe(error));
    }
  });
}

/** The first value of a response header, from undici's raw [name, value, ...] list. */
function headerValue(raw: Buffer[] | undefined, name: string): string | undefined {
  if (!raw) return undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length === name.length && key.toString('latin1').toLowerCase() === name) return raw[i + 1]!.toString('latin1');
  }
  return undefined;
}

/**
 * A `Retry-After` value in ms from `nowMs`: delta-seconds (`120`) or an HTTP date
 * (`Wed, 21 Oct 2026 07:28:00 GMT`). A date in the past gives 0; anything else, `undefined`.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Only a date with letters in it: Date.parse would also read bare numbers such as "1.5" as dates.
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** The ErrorClass of an error raised before a response head arrived. */
export function classify(error: unknown): ErrorClass {
  const codes = errorCodes(error);
  if (codes.includes(SSRF_REFUSED)) return 'ssrf';
  if (codes.some((code) => DNS_CODES.has(code))) return 'dns';
  if (codes.some((code) => TLS_CODE.test(code))) return 'tls';
  if (codes.some((code) => TIMEOUT_CODES.has(code))) return 'timeout';
  if (codes.some((code) => CONNECT_CODES.has(code))) return 'connect';
  return 'protocol';
}

/** Codes of the error, its causes and, for happy-eyeballs AggregateErrors, each attempt's error. */
function errorCodes(error: unknown, depth = 0): string[] {
  if (depth > 5 || error === null || typeof error !== 'object') return [];
  const { code, cause, errors } = error as { code?: unknown; cause?: unknown; errors?: unknown };
  const own = typeof code === 'string' ? [code] : [];
  const nested = Array.isArray(errors) ? errors.flatMap((e) => errorCodes(e, depth + 1)) : [];
  return [...own, ...errorCodes(cause, depth + 1), ...nested];
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  const message = error.message || (error instanceof AggregateError ? error.errors.map(describe).join('; ') : error.name);
  return typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message;
}
