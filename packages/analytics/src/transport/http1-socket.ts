import net from 'node:net';
import { followSignal, type HookedRequest, onAbortKey } from './abort-hook.js';
import { Http1ResponseParser, type ParsedResponse } from './http1-response-parser.js';
import type { Transport, TransportRequest, TransportResponse } from './transport.js';

/** Settings of {@link createSocketTransport}. */
export interface SocketTransportOptions {
  /** Largest response body read, in bytes; the rest is discarded. Default 65,536. */
  maxResponseBytes?: number;
}

// RFC 9110 token, and the value characters node:http accepts (its checkInvalidHeaderChar):
// the head is written as latin1, so anything above 0xff would lose its high byte on the wire.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
const NON_ASCII = /[\u0080-\uffff]/;
// Framing and routing are the transport's: a caller's own would smuggle a second request.
const RESERVED = new Set(['content-length', 'host', 'connection', 'transfer-encoding']);

interface Target {
  host: string;
  port: number;
  /** `host:port`: the Host header, and the key of the idle connections. */
  origin: string;
  path: string;
}

type Settle = (error: Error | undefined, response?: ParsedResponse) => void;

/** A reused connection that was lost before any byte of the answer: the request may go again. */
class StaleConnectionError extends Error {}

/** One keep-alive connection, carrying one request at a time. */
class Connection {
  readonly socket: net.Socket;
  readonly origin: string;
  #parser: Http1ResponseParser | undefined;
  #settle: Settle | undefined;
  #onIdle: (c: Connection) => void;
  /** Whether an earlier exchange completed on this connection. */
  #reused = false;
  /** Whether the exchange in progress has had any byte of its answer. */
  #answered = false;

  constructor(target: Target, onIdle: (c: Connection) => void, onClose: (c: Connection) => void) {
    this.#onIdle = onIdle;
    this.origin = target.origin;
    this.socket = net.connect({ host: target.host, port: target.port });
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    this.socket.on('end', () => this.#onEnd());
    this.socket.on('error', (error) => this.#lost(error));
    // Armed only while idle (see #finish).
    this.socket.on('timeout', () => this.socket.destroy());
    this.socket.on('close', () => {
      onClose(this);
      this.#lost(new Error('The connection closed before the response was complete.'));
    });
  }

  /** Whether the connection can carry another request: neither side has ended it. */
  get usable(): boolean {
    const s = this.socket;
    return !s.destroyed && !s.readableEnded && !s.writableEnded;
  }

  /**
   * Writes one request and calls `settle` once with its response or error. The head is
   * written as latin1; `asciiHead` says it is all ASCII, where UTF-8 gives the same bytes.
   */
  exchange(head: string, asciiHead: boolean, body: string | Uint8Array, maxResponseBytes: number, settle: Settle): void {
    this.#parser = new Http1ResponseParser(maxResponseBytes);
    this.#settle = settle;
    this.#answered = false;
    this.socket.ref();
    if (this.socket.timeout) this.socket.setTimeout(0);
    // One write, so head and body leave in as few packets as the kernel allows.
    if (typeof body === 'string' && asciiHead) {
      this.socket.write(head + body);
    } else {
      this.socket.cork();
      this.socket.write(head, 'latin1');
      this.socket.write(body);
      this.socket.uncork();
    }
  }

  /** Ends the exchange in progress (if any) with `error` and drops the connection. */
  abort(error: Error): void {
    const settle = this.#settle;
    this.#parser = undefined;
    this.#settle = undefined;
    this.socket.destroy();
    settle?.(error);
  }

  /**
   * The connection failed under the exchange in progress. On a reused connection before any
   * byte of the answer, the server most likely closed it while idle and never read the request.
   */
  #lost(error: Error): void {
    this.abort(this.#reused && !this.#answered && this.#settle !== undefined ? new StaleConnectionError(error.message, { cause: error }) : error);
  }

  #onData(chunk: Buffer): void {
    // Bytes nobody asked for: the connection's state is unknown, so it cannot be reused.
    if (this.#parser === undefined) return void this.socket.destroy();
    this.#answered = true;
    let response: ParsedResponse | undefined;
    try {
      response = this.#parser.feed(chunk);
    } catch (error) {
      return this.abort(error as Error);
    }
    if (response) this.#finish(response);
  }

  #onEnd(): void {
    if (this.#parser === undefined) return void this.socket.destroy();
    let response: ParsedResponse;
    try {
      response = this.#parser.end();
    } catch (error) {
      return this.#lost(error as Error);
    }
    this.#finish(response, false);
  }

  #finish(response: ParsedResponse, open = true): void {
    const settle = this.#settle!;
    this.#parser = undefined;
    this.#settle = undefined;
    this.#reused = true;
    const idleMs = idleLimitMs(response.headers['keep-alive']);
    if (open && response.keepAlive && idleMs !== 0) {
      // An idle connection must not keep the process alive.
      this.socket.unref();
      if (idleMs !== undefined) this.socket.setTimeout(idleMs);
      this.#onIdle(this);
    } else {
      this.socket.destroy();
    }
    settle(undefined, response);
  }
}

/**
 * How long a connection may stay idle, from the server's `Keep-Alive: timeout=N` hint: 1 s
 * less, as Node's http agent reckons it, so that a request is not sent just as the server
 * closes the connection. 0 means not to reuse it; undefined, no hint.
 */
function idleLimitMs(hint: string | undefined): number | undefined {
  const seconds = hint === undefined ? undefined : /(?:^|[\s,])timeout=(\d+)/i.exec(hint)?.[1];
  return seconds === undefined ? undefined : Math.max(0, Number(seconds) * 1000 - 1000);
}

function parseTarget(url: string): Target {
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:') throw new Error(`The socket transport sends only http: URLs, not ${parsed.protocol}`);
  const port = parsed.port === '' ? 80 : Number(parsed.port);
  // URL keeps IPv6 hosts in brackets; the socket wants the bare address.
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  return { host, port, origin: parsed.host, path: `${parsed.pathname}${parsed.search}` };
}

/**
 * The request head up to (not including) Content-Length, checked once for a headers object.
 * Throws for a name that is not a token, one the transport sets itself, or a value character
 * that a latin1 head cannot carry or that would end the line.
 */
function headPrefix(target: Target, method: string, headers: Record<string, string>): string {
  if (!TOKEN.test(method)) throw new Error(`Invalid method: ${JSON.stringify(method)}`);
  // HTTP/1.1's default connection, said anyway as node:http does, for intermediaries that still need it.
  let head = `${method} ${target.path} HTTP/1.1\r\nhost: ${target.origin}\r\nconnection: keep-alive\r\n`;
  for (const name in headers) {
    const value = headers[name]!;
    if (!TOKEN.test(name)) throw new Error(`Invalid header name: ${JSON.stringify(name)}`);
    if (RESERVED.has(name.toLowerCase())) throw new Error(`The transport sets header ${name} itself`);
    if (BAD_VALUE.test(value)) throw new Error(`Invalid value for header ${name}`);
    head += `${name}: ${value}\r\n`;
  }
  return head;
}

/**
 * The default transport for `http:` endpoints: HTTP/1.1 written straight onto `node:net`
 * keep-alive connections, one request at a time per connection. Chosen over `node:http`, whose
 * request cost about three times the CPU of this one at batches of 20 in a freshly started
 * process. It reads content-length, chunked and close-delimited responses and skips 1xx
 * ones. `https:` URLs are refused: the client's default transport sends them through
 * `node:https`. Idle connections are unref'd, and close() destroys every connection, so
 * nothing holds the process open.
 */
export function createSocketTransport(options: SocketTransportOptions = {}): Transport {
  const maxResponseBytes = options.maxResponseBytes ?? 65_536;
  const idle = new Map<string, Connection[]>();
  const open = new Set<Connection>();
  // The client posts every request to one URL with one headers object: build the head once.
  let cached: { url: string; method: string; headers: Record<string, string>; target: Target; prefix: string; asciiHead: boolean } | undefined;

  const onIdle = (c: Connection) => {
    const list = idle.get(c.origin);
    if (list) list.push(c);
    else idle.set(c.origin, [c]);
  };
  const connect = (target: Target) => {
    const c = new Connection(target, onIdle, onClose);
    open.add(c);
    return c;
  };
  const onClose = (c: Connection) => {
    open.delete(c);
    const list = idle.get(c.origin);
    const at = list ? list.indexOf(c) : -1;
    if (at >= 0) list!.splice(at, 1);
  };

  return {
    send(request: TransportRequest): Promise<TransportResponse> {
      return new Promise((resolve, reject) => {
        if (cached?.url !== request.url || cached.method !== request.method || cached.headers !== request.headers) {
          const target = parseTarget(request.url);
          const prefix = headPrefix(target, request.method, request.headers);
          cached = { url: request.url, method: request.method, headers: request.headers, target, prefix, asciiHead: !NON_ASCII.test(prefix) };
        }
        const { target, prefix, asciiHead } = cached;
        const { body } = request;
        const length = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.byteLength;
        const head = `${prefix}content-length: ${length}\r\n\r\n`;
        const list = idle.get(target.origin);
        let c = list?.pop();
        // A connection the server ended may still be listed until its 'close': skip it.
        while (c !== undefined && !c.usable) c = list!.pop();
        if (c === undefined) c = connect(target);
        let settled = false;
        let stopFollowing: (() => void) | undefined;
        const settle: Settle = (error, response) => {
          // Batches are idempotent by messageId, so sending again a request the server most
          // likely never read is safe; a fresh connection cannot be stale, so this happens once.
          if (error instanceof StaleConnectionError) return (c = connect(target)).exchange(head, asciiHead, body, maxResponseBytes, settle);
          settled = true;
          stopFollowing?.();
          if (error) return reject(error);
          const { status, headers, body: text } = response!;
          resolve({ status, headers, body: text });
        };
        c.exchange(head, asciiHead, body, maxResponseBytes, settle);
        const onAbort = () => c!.abort(new Error('The request was aborted.'));
        const hook = (request as HookedRequest)[onAbortKey];
        stopFollowing = hook ? hook(onAbort) : followSignal(request.signal, onAbort);
        // The hook runs onAbort at once for an attempt already aborted, before its remover exists.
        if (settled) stopFollowing();
      });
    },
    close() {
      for (const c of open) c.socket.destroy();
      open.clear();
      idle.clear();
    },
  };
}
