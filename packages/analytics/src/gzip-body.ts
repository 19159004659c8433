import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

const gzipAsync = promisify(gzip);

/** Gzips a request body on libuv's thread pool, off the event loop. */
export function gzipBody(body: string): Promise<Uint8Array> {
  return gzipAsync(body);
}
