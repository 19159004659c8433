import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';

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
 * Checks an `X-Signature` header against the raw request body, in constant time.
 *
 * Verify the body exactly as it arrived (the raw bytes, before any JSON parsing): Ferry signs
 * the bytes it sends, and re-serialising parsed JSON changes them. A missing, malformed or
 * wrong-length header returns `false`; this function never throws for bad input. Hex digits
 * are accepted in either case and surrounding whitespace is ignored.
 *
 * @param rawBody - the request body exactly as received
 * @param signatureHeader - the value of the `X-Signature` header, if any
 * @param secret - the shared secret configured on the Ferry destination
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
export function verifySignature(rawBody: string | Uint8Array, signatureHeader: string | null | undefined, secret: string): boolean {
  if (typeof signatureHeader !== 'string' || typeof secret !== 'string') return false;
  const candidate = signatureHeader.trim().toLowerCase();
  // Shape is checked before decoding because Buffer.from(hex) silently drops invalid digits,
  // which would let a malformed header decode to something comparable.
  if (candidate.length !== SIGNATURE_HEX_LENGTH || !HEX_SIGNATURE.test(candidate)) return false;
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) return false;
  const expected = createHmac('sha1', keyFor(secret)).update(rawBody).digest();
  const received = Buffer.from(candidate, 'hex');
  return received.length === expected.length && timingSafeEqual(received, expected);
}
