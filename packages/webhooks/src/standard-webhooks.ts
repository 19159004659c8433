/**
 * Standard Webhooks (standardwebhooks.com): the `webhook-id`, `webhook-timestamp` and
 * `webhook-signature` headers Ferry sends beside `X-Signature` when a destination lists
 * `standardWebhooks.secrets`. Ferry's server signs with {@link standardWebhookSignatures}, so a
 * receiver that verifies with {@link verifyStandardWebhook} cannot disagree with the sender.
 */
import { createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import { headerValue, type HeadersLike } from './header-value.js';

/** The prefix of a Standard Webhooks secret: `whsec_` and the base64 of the key's bytes. */
export const STANDARD_WEBHOOKS_SECRET_PREFIX = 'whsec_';

/** How far (seconds) a `webhook-timestamp` may lie from the receiver's clock, either way, by default: 5 minutes, as the specification and its libraries use. */
export const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

/** The three headers, as Ferry spells them (lower case, as the specification does). */
export const STANDARD_WEBHOOKS_HEADERS = Object.freeze({ id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' });

// Standard base64 with its padding: Buffer.from(_, 'base64') skips any other character silently.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const TIMESTAMP = /^[0-9]{1,15}$/;

/**
 * Keys prepared once per secret, as for `X-Signature`: decoding the base64 and preparing a key
 * on every request would cost more than the HMAC of a small body. Bounded, oldest out first.
 */
const keys = new Map<string, KeyObject>();
const KEY_CACHE_LIMIT = 64;

/**
 * The key bytes of a Standard Webhooks secret: `whsec_` and base64, or the base64 alone (as the
 * reference libraries accept it).
 *
 * @throws TypeError when the secret is not base64 of at least one byte; the message never
 *   repeats the secret.
 *
 * @example
 * ```ts
 * parseStandardWebhookSecret('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw').length; // 24
 * ```
 */
export function parseStandardWebhookSecret(secret: string): Buffer {
  if (typeof secret !== 'string') throw new TypeError('a Standard Webhooks secret must be a string');
  const encoded = secret.startsWith(STANDARD_WEBHOOKS_SECRET_PREFIX) ? secret.slice(STANDARD_WEBHOOKS_SECRET_PREFIX.length) : secret;
  if (encoded === '' || !BASE64.test(encoded))
    throw new TypeError('a Standard Webhooks secret is "whsec_" followed by standard base64 (A-Z, a-z, 0-9, +, /, = padding)');
  return Buffer.from(encoded, 'base64');
}

/**
 * A new random secret in the `whsec_` form, as `POST /admin/v1/destinations/{id}/secrets/rotate`
 * generates them.
 *
 * @param bytes - the key length, 24 to 64 (default 32)
 */
export function generateStandardWebhookSecret(bytes = 32): string {
  if (!Number.isInteger(bytes) || bytes < 24 || bytes > 64) throw new RangeError('a Standard Webhooks key has 24 to 64 bytes');
  return STANDARD_WEBHOOKS_SECRET_PREFIX + randomBytes(bytes).toString('base64');
}

function keyFor(secret: string): KeyObject {
  let key = keys.get(secret);
  if (key === undefined) {
    if (keys.size >= KEY_CACHE_LIMIT) keys.delete(keys.keys().next().value!);
    key = createSecretKey(parseStandardWebhookSecret(secret));
    keys.set(secret, key);
  }
  return key;
}

// The signed content is `${id}.${timestamp}.${body}`: the prefix made once for every secret,
// and the body fed as it is, never copied (each update is a call into the native binding).
function digest(key: KeyObject, prefix: string, body: string | Uint8Array): string {
  return createHmac('sha256', key).update(prefix).update(body).digest('base64');
}

/**
 * One `webhook-signature` entry: `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`,
 * keyed with the secret's bytes.
 *
 * @param id - the `webhook-id` sent
 * @param timestampSeconds - the `webhook-timestamp` sent, Unix seconds
 * @param body - the exact bytes sent (a string is encoded as UTF-8)
 * @param secret - `whsec_` and base64
 *
 * @example
 * ```ts
 * signStandardWebhook('msg_1', 1_700_000_000, '{"type":"track"}', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
 * // 'v1,…'
 * ```
 */
export function signStandardWebhook(id: string, timestampSeconds: number, body: string | Uint8Array, secret: string): string {
  return `v1,${digest(keyFor(secret), `${id}.${timestampSeconds}.`, body)}`;
}

/**
 * The whole `webhook-signature` value for several secrets: one `v1,` entry per secret,
 * space-separated, in the order given. What Ferry sends; one HMAC per secret, nothing more.
 */
export function standardWebhookSignatures(id: string, timestampSeconds: number, body: string | Uint8Array, secrets: readonly string[]): string {
  const prefix = `${id}.${timestampSeconds}.`;
  let out = '';
  for (const secret of secrets) out += (out === '' ? 'v1,' : ' v1,') + digest(keyFor(secret), prefix, body);
  return out;
}

/** Why {@link verifyStandardWebhook} refused a request. */
export type StandardWebhookFailure =
  /** `webhook-id`, `webhook-timestamp` or `webhook-signature` is absent or empty. */
  | 'missing_headers'
  /** `webhook-timestamp` is not a whole number of seconds. */
  | 'invalid_timestamp'
  /** The timestamp is older than the tolerance: possibly a replay of a captured request. */
  | 'timestamp_too_old'
  /** The timestamp is further ahead than the tolerance: the sender's clock, or a forgery. */
  | 'timestamp_too_new'
  /** No `v1` signature matches for any of the secrets. */
  | 'no_matching_signature';

/** The outcome of {@link verifyStandardWebhook}: a value, never thrown for a bad request. */
export type StandardWebhookVerdict =
  | {
      ok: true;
      /** The `webhook-id`: the key to deduplicate on (Ferry sends the `messageId`, the same on every retry). */
      id: string;
      timestampSeconds: number;
    }
  | { ok: false; reason: StandardWebhookFailure; message: string };

/** Options of {@link verifyStandardWebhook}. */
export interface StandardWebhookVerifyOptions {
  /** How far the timestamp may lie from `now`, either way, in seconds. Default {@link DEFAULT_TOLERANCE_SECONDS}. */
  toleranceSeconds?: number;
  /** The receiver's clock, ms since the epoch. Default `Date.now`; tests inject their own. */
  now?: () => number;
}

/**
 * Checks a request's Standard Webhooks headers against the raw body: the timestamp within the
 * tolerance of `now`, and one of its `v1` signatures made with one of the secrets, compared in
 * constant time. Give every secret the sender may sign with during a rotation: the request
 * passes when any of them matches any signature.
 *
 * Verify the body exactly as it arrived, before any JSON parsing.
 *
 * @param rawBody - the request body exactly as received
 * @param headers - the request headers (any case)
 * @param secrets - one or more `whsec_` secrets
 * @returns `{ ok: true, id, timestampSeconds }`, or `{ ok: false, reason, message }`
 * @throws TypeError when a secret is malformed (a configuration mistake, not a bad request)
 *
 * @example
 * ```ts
 * import { verifyStandardWebhook } from '@ferry/webhooks';
 *
 * // Express: app.post('/hooks', express.raw({ type: '*\/*' }), handler)
 * function handler(req, res) {
 *   const verdict = verifyStandardWebhook(req.body, req.headers, [process.env.WHSEC_NEW!, process.env.WHSEC_OLD!]);
 *   if (!verdict.ok) return res.status(401).send(verdict.message);
 *   // verdict.id is the key to deduplicate on
 *   res.status(200).end();
 * }
 * ```
 */
export function verifyStandardWebhook(
  rawBody: string | Uint8Array,
  headers: HeadersLike,
  secrets: string | readonly string[],
  options: StandardWebhookVerifyOptions = {},
): StandardWebhookVerdict {
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  if (list.length === 0) throw new TypeError('verifyStandardWebhook needs at least one secret');
  const prepared = list.map(keyFor);
  const id = headerValue(headers, STANDARD_WEBHOOKS_HEADERS.id);
  const timestampHeader = headerValue(headers, STANDARD_WEBHOOKS_HEADERS.timestamp);
  const signatureHeader = headerValue(headers, STANDARD_WEBHOOKS_HEADERS.signature);
  if (!id || !timestampHeader || !signatureHeader) {
    const missing = [!id && 'webhook-id', !timestampHeader && 'webhook-timestamp', !signatureHeader && 'webhook-signature'].filter(Boolean).join(', ');
    return { ok: false, reason: 'missing_headers', message: `missing ${missing}` };
  }
  const timestampText = timestampHeader.trim();
  if (!TIMESTAMP.test(timestampText)) return { ok: false, reason: 'invalid_timestamp', message: 'webhook-timestamp is not a whole number of seconds' };
  const timestampSeconds = Number(timestampText);
  const nowSeconds = Math.floor((options.now ?? Date.now)() / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (nowSeconds - timestampSeconds > tolerance)
    return {
      ok: false,
      reason: 'timestamp_too_old',
      message: `webhook-timestamp is ${nowSeconds - timestampSeconds} s old; at most ${tolerance} s are accepted`,
    };
  if (timestampSeconds - nowSeconds > tolerance)
    return {
      ok: false,
      reason: 'timestamp_too_new',
      message: `webhook-timestamp is ${timestampSeconds - nowSeconds} s ahead; at most ${tolerance} s are accepted`,
    };
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) return { ok: false, reason: 'no_matching_signature', message: 'no body to verify' };

  // Signed as the reference libraries sign it: the timestamp as a number, so "0170…" signs as "170…".
  const prefix = `${id}.${timestampSeconds}.`;
  const expected = prepared.map((key) => Buffer.from(digest(key, prefix, rawBody)));
  let matched = false;
  for (const entry of signatureHeader.trim().split(' ')) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
    const received = Buffer.from(entry.slice(comma + 1));
    // Every pair is compared, so the time taken does not tell which secret or entry matched.
    for (const e of expected) if (received.length === e.length && timingSafeEqual(received, e)) matched = true;
  }
  if (!matched)
    return {
      ok: false,
      reason: 'no_matching_signature',
      message: `no v1 signature in webhook-signature matches for the ${list.length === 1 ? 'secret' : `${list.length} secrets`} given`,
    };
  return { ok: true, id, timestampSeconds };
}
