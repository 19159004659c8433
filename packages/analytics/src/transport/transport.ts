/** One HTTP request the client wants sent. */
export interface TransportRequest {
  url: string;
  method: 'POST';
  /** Header names are lower-case. */
  headers: Record<string, string>;
  body: string | Uint8Array;
  /**
   * Aborted when the request timeout passes or close() gives up. The transport must then
   * reject promptly and release the connection.
   */
  signal: AbortSignal;
}

/** The answer to a request. */
export interface TransportResponse {
  status: number;
  /** Response headers with lower-case names; only `retry-after` is read. */
  headers: Record<string, string | undefined>;
  /** The response body as text (may be empty); read for Ferry's per-message `rejected` list. */
  body: string;
}

/**
 * Sends HTTP requests for the client. Inject your own for proxies, custom agents, other
 * runtimes or tests; it must not follow redirects. Rejecting means a network error, which
 * is retried.
 */
export interface Transport {
  send(request: TransportRequest): Promise<TransportResponse>;
  /** Releases connections; called once by `close()`. */
  close?(): void;
}
