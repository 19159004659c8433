import net from 'node:net';
import { followSignal, type HookedRequest, onAbortKey } from './abort-hook.js';
import { Http1ResponseParser, type ParsedResponse } from './http1-response-parser.js';
import type { Transport, TransportRequest, TransportResponse } from './transport.js';

/** Settings of {@link createSocketTransport}. */
export interface SocketTransportOptions {
  /** Largest response body read, in bytes; the rest is discarded. Default 65,536. */
  maxResponseBytes?: number;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE = /[\r\n\0]/;

interface Target {
  host: string;
  port: number;
  /** `host:port`: the Host header, and the key of the idle connections. */
  origin: string;
  path: string;
}

type Settle = (error: Error | undefined, response?: ParsedResponse) => void;

/** One keep-alive connection, carrying one request at a time. */
class Connection {
  readonly socket: net.Socket;
  readonly origin: string;
  #parser: Http1ResponseParser | undefined;
  #settle: Settle | undefined;
  #onIdle: (c: Connection) => void;

  constructor(target: Target, onIdle: (c: Connection) => void, onClose: (c: Connection) => void) {
    this.#onIdle = onIdle;
    this.origin = target.origin;
    this.socket = net.connect({ host: target.host, port: target.port });
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    this.socket.on('end', () => this.#onEnd());
    this.socket.on('error', (error) => this.abort(error));
    // Armed only while idle (see #finish).
    this.socket.on('timeout', () => this.socket.destroy());
    this.socket.on('close', () => {
      onClose(this);
      this.abort(new Error('The connection closed before the response was complete.'));
    });
  }

  /** Writes one request and calls `settle` once with its response or error. */
  exchange(head: string, body: string | Uint8Array, maxResponseBytes: number, settle: Settle): void {
    this.#parser = new Http1ResponseParser(maxResponseBytes);
    this.#settle = settle;
    this.socket.ref();
    if (this.socket.timeout) this.socket.setTimeout(0);
    // One write, so head and body leave in as few packets as the kernel allows.
    if (typeof body === 'string') {
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

  #onData(chunk: Buffer): void {
    // Bytes nobody asked for: the connection's state is unknown, so it cannot be reused.
    if (this.#parser === undefined) return void this.socket.destroy();
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
      return this.abort(error as Error);
    }
    this.#finish(response, false);
  }

  #finish(response: ParsedResponse, open = true): void {
    const settle = this.#settle!;
    this.#parser = undefined;
    this.#settle = undefined;
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

/** The request head up to (not including) Content-Length, checked once for a headers object. */
function headPrefix(target: Target, method: string, headers: Record<string, string>): string {
  let head = `${method} ${target.path} HTTP/1.1\r\n`;
  if (headers['host'] === undefined) head += `host: ${target.origin}\r\n`;
  // HTTP/1.1's default, said anyway as node:http does, for intermediaries that still need it.
  if (headers['connection'] === undefined) head += 'connection: keep-alive\r\n';
  for (const name in headers) {
    if (name === 'content-length') continue;
    const value = headers[name]!;
    if (!TOKEN.test(name)) throw new Error(`Invalid header name: ${JSON.stringify(name)}`);
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
  let cached: { url: string; headers: Record<string, string>; target: Target; prefix: string } | undefined;

  const onIdle = (c: Connection) => {
    const list = idle.get(c.origin);
    if (list) list.push(c);
    else idle.set(c.origin, [c]);
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
        if (cached?.url !== request.url || cached.headers !== request.headers) {
          const target = parseTarget(request.url);
          cached = { url: request.url, headers: request.headers, target, prefix: headPrefix(target, request.method, request.headers) };
        }
        const { target, prefix } = cached;
        const { body } = request;
        const length = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.byteLength;
        let connection = idle.get(target.origin)?.pop();
        if (connection === undefined) {
          connection = new Connection(target, onIdle, onClose);
          open.add(connection);
        }
        const c = connection;
        let stopFollowing: (() => void) | undefined;
        c.exchange(`${prefix}content-length: ${length}\r\n\r\n`, body, maxResponseBytes, (error, response) => {
          stopFollowing?.();
          if (error) return reject(error);
          const { status, headers, body: text } = response!;
          resolve({ status, headers, body: text });
        });
        const onAbort = () => c.abort(new Error('The request was aborted.'));
        const hook = (request as HookedRequest)[onAbortKey];
        stopFollowing = hook ? hook(onAbort) : followSignal(request.signal, onAbort);
      });
    },
    close() {
      for (const c of open) c.socket.destroy();
      open.clear();
      idle.clear();
    },
  };
}
