import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WebhookBody } from './bodies.js';
import { verifySignatureHeaders } from './signature.js';
import { parseStandardWebhookSecret, verifyStandardWebhook, type StandardWebhookVerdict } from './standard-webhooks.js';

/** Default cap on a request body; Ferry's own messages are at most 32 KB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * After refusing an oversized body the listener keeps reading (and discarding) this much more
 * before cutting the connection: a client that is still uploading gets to read the 413 instead
 * of a connection reset, and a client that never stops cannot hold the socket forever.
 */
const DRAIN_LIMIT_BYTES = 8 * 1024 * 1024;

/**
 * What the listener found of a request's signatures. `xSignature`: `verified`, `missing`,
 * `invalid`, or `unchecked` when no shared secret is given. `standardWebhooks`: the verdict of
 * {@link verifyStandardWebhook}, absent when no `whsec_` secret is given.
 */
export interface SignatureVerdicts {
  xSignature: 'verified' | 'missing' | 'invalid' | 'unchecked';
  standardWebhooks?: StandardWebhookVerdict;
}

/** A webhook that was accepted (answered 200). */
export interface ReceivedWebhook {
  /** The parsed JSON body. Parsed, not validated: fields may be missing on a body from another sender. */
  body: WebhookBody;
  /** The body exactly as received, as the signature covers it. */
  rawBody: Buffer;
  /** Request headers, lowercase names. */
  headers: IncomingHttpHeaders;
  /** True when a secret is configured and `X-Signature` matched; false when no secret is configured. */
  verified: boolean;
  /** Both checks; absent only on values made by older callers. */
  verdicts?: SignatureVerdicts;
  method: string;
  /** Path and query of the request. */
  path: string;
  /** Arrival time, ms since the epoch. */
  receivedAtMs: number;
}

/** Why the listener refused a request; also the `error` member of its JSON answer. */
export type RejectionCode =
  'method_not_allowed' | 'payload_too_large' | 'missing_signature' | 'invalid_signature' | 'invalid_standard_webhook' | 'invalid_json' | 'not_an_object';

/** A request the listener refused, with the status it answered. */
export interface RejectedWebhook {
  statusCode: 400 | 401 | 405 | 413;
  code: RejectionCode;
  message: string;
  headers: IncomingHttpHeaders;
  method: string;
  path: string;
  receivedAtMs: number;
  /** The body as received; absent when it was too large to keep. */
  rawBody?: Buffer;
  /** Both checks, on a refusal for a signature. */
  verdicts?: SignatureVerdicts;
}

/** Options of {@link createListener}. */
export interface ListenerOptions {
  /** TCP port; 0 (the default) picks a free one, see {@link WebhookListener.address}. */
  port?: number;
  /** Interface to bind; default `127.0.0.1` so a local listener is not reachable from the network. */
  host?: string;
  /**
   * The destination's shared secret, or several during a rotation. When set, requests without
   * a matching `X-Signature` (or, during a rotation, `X-Ferry-Signatures`) get 401. Empty or
   * absent: nothing is checked, as Ferry does not sign for an empty secret.
   */
  secret?: string | readonly string[];
  /**
   * The destination's Standard Webhooks secrets (`whsec_…`). When given, requests whose
   * `webhook-*` headers do not verify get 401 `invalid_standard_webhook`.
   *
   * @throws TypeError from {@link createListener} when one is malformed.
   */
  standardWebhooksSecrets?: readonly string[];
  /** How far `webhook-timestamp` may lie from now, seconds. Default 300. */
  toleranceSeconds?: number;
  /** The clock of arrivals and of the timestamp check, ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /** Larger bodies get 413. Default {@link DEFAULT_MAX_BODY_BYTES}. */
  maxBodyBytes?: number;
  /** Called after the 200 has been sent, once per accepted webhook. */
  onEvent?: (event: ReceivedWebhook) => void | Promise<void>;
  /** Called once per refused request, after the error status has been sent. */
  onRejected?: (rejection: RejectedWebhook) => void | Promise<void>;
  /** Receives errors thrown by `onEvent`/`onRejected`. Default: printed with `console.error`. */
  onError?: (error: unknown) => void;
}

/** A running (or startable) local webhook receiver. */
export interface WebhookListener {
  /** The underlying node:http server, for callers that need its events. */
  readonly server: Server;
  /** Binds the port; resolves once listening. */
  start(): Promise<void>;
  /** Stops accepting, closes idle and open connections; resolves once closed. */
  close(): Promise<void>;
  /** The bound address, once listening. */
  readonly address: AddressInfo | undefined;
  /** `http://host:port/` to paste into a destination's settings, once listening. */
  readonly url: string | undefined;
}

/**
 * Creates a local HTTP server that receives Ferry webhooks, as `ferry listen` runs it.
 *
 * Every POST, on any path, is read up to `maxBodyBytes`, its `X-Signature` checked when a
 * secret is given and its Standard Webhooks headers when `whsec_` secrets are, its JSON parsed, and then answered at once with `200 {"ok":true}`; only
 * after the answer is `onEvent` called, so a slow handler never makes Ferry time out and retry.
 * Refusals are answered with `{"ok":false,"error":code,"message":...}`: 401 for a missing or
 * wrong signature of either kind, 400 for a body that is not a JSON object, 413 for a body over the limit,
 * 405 for a method other than POST.
 *
 * @example
 * ```ts
 * import { createListener, formatEvent, formatRejection } from '@ferry/webhooks';
 *
 * const listener = createListener({
 *   port: 9000,
 *   secret: process.env.FERRY_SECRET,
 *   onEvent: (event) => console.log(formatEvent(event)),
 *   onRejected: (rejection) => console.log(formatRejection(rejection)),
 * });
 * await listener.start();
 * console.log(`listening on ${listener.url}`);
 * // later: await listener.close();
 * ```
 */
export function createListener(options: ListenerOptions = {}): WebhookListener {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 0;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  // Ferry's sender does not sign when sharedSecret is empty, so an empty secret means "none" here too.
  const secrets = (typeof options.secret === 'string' ? [options.secret] : (options.secret ?? [])).filter((s) => s !== '');
  const secret = secrets.length > 0 ? secrets : undefined;
  const whsecs = options.standardWebhooksSecrets ?? [];
  // A malformed secret is the caller's mistake: say so at once, not on every request.
  for (const s of whsecs) parseStandardWebhookSecret(s);
  const now = options.now ?? Date.now;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes <= 0) {
    throw new RangeError(`maxBodyBytes must be a positive integer, got ${String(options.maxBodyBytes)}`);
  }
  const onError = options.onError ?? ((error: unknown) => console.error('webhook listener handler failed:', error));

  const invoke = <T>(handler: ((value: T) => void | Promise<void>) | undefined, value: T): void => {
    if (!handler) return;
    try {
      Promise.resolve(handler(value)).catch(onError);
    } catch (error) {
      onError(error);
    }
  };

  const server = createServer((req, res) => {
    const receivedAtMs = now();
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const base = { headers: req.headers, method, path, receivedAtMs };

    const reject = (rejection: Omit<RejectedWebhook, keyof typeof base>): void => {
      const extra: Record<string, string> = rejection.statusCode === 405 ? { allow: 'POST' } : {};
      sendJson(res, rejection.statusCode, { ok: false, error: rejection.code, message: rejection.message }, extra);
      invoke(options.onRejected, { ...base, ...rejection });
    };

    if (method !== 'POST') {
      req.resume();
      reject({ statusCode: 405, code: 'method_not_allowed', message: 'webhooks are delivered with POST' });
      return;
    }

    const tooLarge = (): void => reject({ statusCode: 413, code: 'payload_too_large', message: `body exceeds ${maxBodyBytes} bytes` });

    readBoundedBody(req, maxBodyBytes, tooLarge, (rawBody) => {
      const verdicts: SignatureVerdicts = {
        xSignature:
          secret === undefined
            ? 'unchecked'
            : firstHeader(req.headers['x-signature']) === undefined
              ? 'missing'
              : verifySignatureHeaders(rawBody, req.headers, secret)
                ? 'verified'
                : 'invalid',
      };
      if (whsecs.length > 0)
        verdicts.standardWebhooks = verifyStandardWebhook(rawBody, req.headers, whsecs, { now, toleranceSeconds: options.toleranceSeconds });
      if (verdicts.xSignature === 'missing') {
        reject({ statusCode: 401, code: 'missing_signature', message: 'X-Signature header is missing', rawBody, verdicts });
        return;
      }
      if (verdicts.xSignature === 'invalid') {
        reject({
          statusCode: 401,
          code: 'invalid_signature',
          message: 'X-Signature does not match the body for the configured secret',
          rawBody,
          verdicts,
        });
        return;
      }
      const standard = verdicts.standardWebhooks;
      if (standard !== undefined && !standard.ok) {
        reject({ statusCode: 401, code: 'invalid_standard_webhook', message: `Standard Webhooks: ${standard.message}`, rawBody, verdicts });
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(rawBody.toString('utf8'));
      } catch (error) {
        const detail = error instanceof Error ? error.message : String(error);
        reject({ statusCode: 400, code: 'invalid_json', message: `body is not valid JSON: ${detail}`, rawBody });
        return;
      }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) {
        reject({ statusCode: 400, code: 'not_an_object', message: 'body is not a JSON object', rawBody });
        return;
      }
      sendJson(res, 200, { ok: true });
      invoke(options.onEvent, { ...base, body: body as WebhookBody, rawBody, verified: verdicts.xSignature === 'verified', verdicts });
    });
  });

  let address: AddressInfo | undefined;

  return {
    server,
    get address() {
      return address;
    },
    get url() {
      if (!address) return undefined;
      const hostPart = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      return `http://${hostPart}:${address.port}/`;
    },
    start() {
      return new Promise<void>((resolve, reject) => {
        const onListenError = (error: Error): void => reject(error);
        server.once('error', onListenError);
        server.listen(port, host, () => {
          server.off('error', onListenError);
          // After start, a server error (say too many open files on accept) is reported, not fatal.
          server.on('error', (error) => onError(error));
          address = server.address() as AddressInfo;
          resolve();
        });
      });
    },
    close() {
      return new Promise<void>((resolve, reject) => {
        if (!server.listening) {
          resolve();
          return;
        }
        server.close((error) => (error ? reject(error) : resolve()));
        // Keep-alive sockets from senders would otherwise hold close() open until they time out.
        server.closeAllConnections();
      });
    },
  };
}

/**
 * Collects the body, calling `onTooLarge` (once) as soon as the declared or received size
 * passes the limit, and `onComplete` with the whole body otherwise.
 */
function readBoundedBody(req: IncomingMessage, maxBytes: number, onTooLarge: () => void, onComplete: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  let received = 0;
  let refused = false;
  let drainUntil = 0;

  const refuse = (): void => {
    refused = true;
    chunks.length = 0;
    drainUntil = received + DRAIN_LIMIT_BYTES;
    onTooLarge();
  };

  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) refuse();

  req.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (refused) {
      if (received > drainUntil) req.destroy();
      return;
    }
    if (received > maxBytes) {
      refuse();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (!refused) onComplete(Buffer.concat(chunks, received));
  });
  // A client that disconnects mid-body needs no answer; the error only has to be observed.
  req.on('error', () => {});
}

function sendJson(res: ServerResponse, statusCode: number, payload: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  const text = JSON.stringify(payload);
  res.writeHead(statusCode, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
