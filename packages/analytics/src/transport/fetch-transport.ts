import { AnalyticsError } from '../errors.js';
import type { Transport, TransportResponse } from './transport.js';

/** Settings of {@link createFetchTransport}. */
export interface FetchTransportOptions {
  /**
   * The `fetch` to call. Default: the global `fetch`, looked up at each request so a
   * runtime's or a test's wrapper installed later is used.
   */
  fetch?: typeof fetch;
}

/**
 * A transport on the standard `fetch`, for runtimes without `node:http` (Cloudflare Workers,
 * Vercel Edge, Deno Deploy) and selectable in Node with `transport: 'fetch'`. It does not
 * follow redirects (a 3xx is the answer), aborts through the request's `signal` when the
 * attempt times out or `close()` gives up, and reads the whole response body before it
 * resolves. Connection reuse is the runtime's.
 *
 * @throws AnalyticsError `invalid_option` when `fetch` is given and is not a function.
 */
export function createFetchTransport(options: FetchTransportOptions = {}): Transport {
  const given = options.fetch;
  if (given !== undefined && typeof given !== 'function') throw new AnalyticsError('invalid_option', '`fetch` must be a function.');
  return {
    async send(request): Promise<TransportResponse> {
      const doFetch = given ?? globalThis.fetch;
      if (typeof doFetch !== 'function') throw new Error('this runtime has no global fetch');
      const res = await doFetch(request.url, {
        method: request.method,
        headers: request.headers,
        body: request.body,
        signal: request.signal,
        redirect: 'manual',
      });
      const body = await res.text();
      const headers: Record<string, string> = {};
      res.headers.forEach((value, name) => {
        headers[name.toLowerCase()] = value;
      });
      return { status: res.status, headers, body };
    },
  };
}
