import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { headerValue, type HeadersLike } from './header-value.js';

/** Length in hex characters of an HMAC-SHA1 digest. */
const SIGNATURE_HEX_LENGTH = 40;
const HEX_SIGNATURE = /^[0-9a-f]{40}$/;

/**
 * Keys prepared once per secret: preparing one from a string each time took about a quarter
 * of signing a 400-byte body. Past this many secrets the one prepared longest ago goes, so
 * the cache never grows and a secret no longer used does not stay for long.
 */
const keys = new Map<string, KeyObject>();
const KEY_CACHE_LIMIT = 64;

function keyFor(secret: string): KeyObject {
  let key = keys.get(secret);
  if (key === undefined) {
    if (keys.size >= KEY_CACHE_LIMIT) keys.delete(keys.keys().next().value!);
    key = createSecretKey(Buffer.from(secret, 'utf8'));
    keys.set(secret, key);
  }
  return key;
}

/**
 * Computes the `X-Signature` value Ferry sends: the lowercase hex HMAC-SHA1 of the exact body
 * bytes, keyed with the destination's shared secret. A string body is encoded as UTF-8.
 *
 * Ferry's server signs with this same function, so a receiver that verifies with
 * {@link verifySignature} cannot disagree with the sender about the algorithm or encoding.
 *
 * @param body - the exact bytes sent (or about to be sent) as the request body
 * @param secret - the destination's `sharedSecret`
 * @returns 40 lowercase hex characters
 *
 * @example
 * ```ts
 * import { signBody } from '@ferry/webhooks';
 *
 * const body = JSON.stringify({ version: 1, type: 'track', event: 'Signed Up' });
 * const signature = signBody(body, process.env.FERRY_SECRET!);
 * // -> e.g. '3f1c...'; send it as the X-Signature header
 * ```
 */
export function signBody(body: string | Uint8Array, secret: string): string {
  return createHmac('sha1', keyFor(secret)).update(body).digest('hex');
}

/**
 * The header carrying every signature while a `sharedSecret` rotation overlaps: the hex
 * HMAC-SHA1 of the body with each secret still signing, newest first, space-separated.
 * Absent outside a rotation. `X-Signature` meanwhile carries the oldest secret's signature, so
 * a receiver that changed nothing keeps verifying until that secret expires.
 */
export const ROTATION_SIGNATURES_HEADER = 'X-Ferry-Signatures';

/**
 * Checks an `X-Signature` header against the raw request body, in constant time.
 *
 * Verify the body exactly as it arrived (the raw bytes, before any JSON parsing): Ferry signs
 * the bytes it sends, and re-serialising parsed JSON changes them. A missing, malformed or
 * wrong-length header returns `false`; this function never throws for bad input. Hex digits
 * are accepted in either case and surrounding whitespace is ignored.
 *
 * During a rotation, give both secrets: the header matches when it was made with any of them.
 *
 * @param rawBody - the request body exactly as received
 * @param signatureHeader - the value of the `X-Signature` header, if any
 * @param secret - the shared secret configured on the Ferry destination, or several
 * @returns `true` when the signature matches
 *
 * @example
 * ```ts
 * import { verifySignature } from '@ferry/webhooks';
 *
 * // Express: app.post('/hooks', express.raw({ type: '*\/*' }), handler)
 * function handler(req, res) {
 *   if (!verifySignature(req.body, req.get('x-signature'), process.env.FERRY_SECRET!)) {
 *     return res.status(401).end();
 *   }
 *   const event = JSON.parse(req.body.toString('utf8'));
 *   res.status(200).end();
 * }
 * ```
 */
export function verifySignature(rawBody: string | Uint8Array, signatureHeader: string | null | undefined, secret: string | readonly string[]): boolean {
  if (typeof signatureHeader !== 'string') return false;
  const received = decodeSignature(signatureHeader);
  if (received === undefined) return false;
  return matchesAny(rawBody, [received], secret);
}

/**
 * Checks a request's `X-Signature` and, during a `sharedSecret` rotation, its
 * `X-Ferry-Signatures` ({@link ROTATION_SIGNATURES_HEADER}) against one or more secrets, in
 * constant time: true when any signature was made with any of them. With this, a receiver can
 * switch to the new secret the moment it is rotated, and a receiver that kept the old one
 * verifies until it expires.
 *
 * @param rawBody - the request body exactly as received
 * @param headers - the request headers (any case)
 * @param secret - one or more shared secrets
 *
 * @example
 * ```ts
 * if (!verifySignatureHeaders(req.body, req.headers, process.env.FERRY_SECRET!)) return res.status(401).end();
 * ```
 */
export function verifySignatureHeaders(rawBody: string | Uint8Array, headers: HeadersLike, secret: string | readonly string[]): boolean {
  const candidates: Buffer[] = [];
  const single = headerValue(headers, 'X-Signature');
  const decoded = single === undefined ? undefined : decodeSignature(single);
  if (decoded !== undefined) candidates.push(decoded);
  for (const entry of (headerValue(headers, ROTATION_SIGNATURES_HEADER) ?? '').split(' ')) {
    const more = decodeSignature(entry);
    if (more !== undefined) candidates.push(more);
  }
  return candidates.length > 0 && matchesAny(rawBody, candidates, secret);
}

function decodeSignature(header: string): Buffer | undefined {
  const candidate = header.trim().toLowerCase();
  // Shape is checked before decoding because Buffer.from(hex) silently drops invalid digits,
  // which would let a malformed header decode to something comparable.
  if (candidate.length !== SIGNATURE_HEX_LENGTH || !HEX_SIGNATURE.test(candidate)) return undefined;
  return Buffer.from(candidate, 'hex');
}

function matchesAny(rawBody: string | Uint8Array, received: readonly Buffer[], secret: string | readonly string[]): boolean {
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) return false;
  const secrets = typeof secret === 'string' ? [secret] : Array.isArray(secret) ? (secret as readonly unknown[]) : [];
  let matched = false;
  for (const s of secrets) {
    if (typeof s !== 'string') continue;
    const expected = createHmac('sha1', keyFor(s)).update(rawBody).digest();
    // Every pair is compared, so the time taken does not tell which secret matched.
    for (const r of received) if (r.length === expected.length && timingSafeEqual(r, expected)) matched = true;
  }
  return matched;
}
