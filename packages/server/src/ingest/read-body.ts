import { gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import { FerryError } from '../errors/error-codes.js';
import { isWithinJsonDepth } from './json-depth.js';

const gunzipAsync = promisify(gunzip);

/** Ingestion limits of the Segment-compatible API. */
export const ingestLimits = {
  /** One request body, after decompression: 500 KB. */
  maxRequestBytes: 500 * 1024,
  /** One request body as sent: the limit above plus room for gzip's framing of an incompressible body. */
  maxRawRequestBytes: 500 * 1024 + 1024,
  /**
   * Nesting of the whole request body. Messages have their own, tighter limit; this one only
   * keeps hostile input away from recursive code such as JSON.stringify.
   */
  maxRequestDepth: 128,
} as const;

/**
 * Turns the raw request bytes into a parsed JSON value, or throws a {@link FerryError} with a
 * stable code: an unknown encoding, bad gzip, a decompression bomb, oversize, bad JSON, or
 * nesting past the request limit.
 *
 * `Content-Type` is not consulted: real clients label JSON wrongly (RudderStack's Node SDK
 * sends gzipped JSON as `application/x-www-form-urlencoded`, browsers' sendBeacon as
 * `text/plain`), and refusing them loses every call they make. Bytes that are not JSON are
 * still refused, whatever the label.
 */
export async function readJsonBody(raw: Buffer | undefined, headers: { 'content-encoding'?: string }): Promise<unknown> {
  let bytes = raw ?? Buffer.alloc(0);
  const encoding = (headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (isGzip(encoding)) {
    try {
      // One byte over the limit is enough to know the body is too large: never inflate a bomb.
      bytes = await gunzipAsync(bytes, { maxOutputLength: ingestLimits.maxRequestBytes + 1 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError)
        throw new FerryError('payload_too_large', 'the decompressed body is over 500 KB');
      throw new FerryError('invalid_gzip');
    }
  } else if (encoding !== 'identity' && encoding !== '') {
    throw new FerryError('unsupported_content_encoding', `Content-Encoding ${encoding} is not supported; use gzip or none`);
  }
  if (bytes.length > ingestLimits.maxRequestBytes) throw new FerryError('payload_too_large');
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new FerryError('invalid_json');
  }
  if (!isWithinJsonDepth(value, ingestLimits.maxRequestDepth))
    throw new FerryError('too_deeply_nested', `the request body is nested deeper than ${ingestLimits.maxRequestDepth} levels`);
  return value;
}

/** True for a `Content-Encoding` that names gzip (`gzip` or its old name `x-gzip`, any case). */
export function isGzip(contentEncoding: string | undefined): boolean {
  const encoding = contentEncoding?.trim().toLowerCase();
  return encoding === 'gzip' || encoding === 'x-gzip';
}

/** The write key of an HTTP Basic `Authorization` header (`base64(writeKey + ":")`), if any. */
export function writeKeyFromBasicAuth(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^\s*basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const key = colon === -1 ? decoded : decoded.slice(0, colon);
  return key.length > 0 ? key : undefined;
}
