/** One HTTP/1.x response, read whole. */
export interface ParsedResponse {
  status: number;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string | undefined>;
  /** The body as text, cut at the parser's byte limit. */
  body: string;
  /** Whether the connection may carry another request. */
  keepAlive: boolean;
}

const CRLF = Buffer.from('\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');
// A response head larger than this is not an answer from a batch endpoint.
const MAX_HEAD_BYTES = 64 * 1024;
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: |$)/;
const CHUNK_SIZE = /^[0-9a-fA-F]{1,15}(?:[ \t]*;.*)?$/;
const DIGITS = /^\d{1,15}$/;

type State = 'head' | 'length' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'until-close' | 'done';

/**
 * Reads one response from the bytes of a connection, fed as they arrive: content-length,
 * chunked and close-delimited bodies, with interim (1xx) responses skipped. Throws an Error
 * for bytes that are not a valid response; the connection must then be dropped.
 */
export class Http1ResponseParser {
  readonly #maxBodyBytes: number;
  #state: State = 'head';
  #pending: Buffer | undefined;
  #status = 0;
  #headers: Record<string, string | undefined> = {};
  #keepAlive = false;
  #remaining = 0;
  #kept: Buffer[] = [];
  #keptBytes = 0;

  /** @param maxBodyBytes Bytes of the body kept; the rest is read and discarded. */
  constructor(maxBodyBytes: number) {
    this.#maxBodyBytes = maxBodyBytes;
  }

  /**
   * Takes the next bytes of the connection. Returns the response once it is complete. Bytes
   * past its end mean the server sent more than was asked for: the response still stands (the
   * server answered), but the connection's state is unknown, so it is marked not reusable.
   */
  feed(chunk: Buffer): ParsedResponse | undefined {
    let buf = this.#pending === undefined ? chunk : Buffer.concat([this.#pending, chunk]);
    this.#pending = undefined;
    for (;;) {
      if (this.#state === 'done') {
        if (buf.length > 0) this.#keepAlive = false;
        return this.#result();
      }
      const used = this.#step(buf);
      if (used < 0) {
        if (buf.length > 0) this.#pending = buf;
        if (this.#state === 'head' && buf.length > MAX_HEAD_BYTES) throw new Error('The response head is too large.');
        return undefined;
      }
      buf = buf.subarray(used);
    }
  }

  /** The connection ended: completes a close-delimited body, else throws. */
  end(): ParsedResponse {
    if (this.#state === 'until-close' || this.#state === 'done') {
      this.#state = 'done';
      return this.#result();
    }
    throw new Error('The connection closed before the response was complete.');
  }

  // Consumes what it can from the start of `buf`: returns the bytes used, or -1 when more are needed.
  #step(buf: Buffer): number {
    switch (this.#state) {
      case 'head': {
        const at = buf.indexOf(HEAD_END);
        if (at < 0) return -1;
        this.#readHead(buf.toString('latin1', 0, at));
        return at + HEAD_END.length;
      }
      case 'length':
      case 'chunk-data': {
        if (buf.length === 0) return -1;
        const n = Math.min(this.#remaining, buf.length);
        this.#keep(buf.subarray(0, n));
        this.#remaining -= n;
        if (this.#remaining === 0) this.#state = this.#state === 'length' ? 'done' : 'chunk-end';
        return n;
      }
      case 'until-close':
        if (buf.length === 0) return -1;
        this.#keep(buf);
        return buf.length;
      case 'chunk-end':
        if (buf.length < CRLF.length) return -1;
        if (buf[0] !== 0x0d || buf[1] !== 0x0a) throw new Error('A response chunk does not end with CRLF.');
        this.#state = 'chunk-size';
        return CRLF.length;
      case 'chunk-size': {
        const at = buf.indexOf(CRLF);
        if (at < 0) return buf.length > 1024 ? this.#fail('A response chunk size line is too long.') : -1;
        const line = buf.toString('latin1', 0, at);
        if (!CHUNK_SIZE.test(line)) this.#fail('A response chunk size is not valid.');
        this.#remaining = Number.parseInt(line, 16);
        this.#state = this.#remaining === 0 ? 'trailers' : 'chunk-data';
        return at + CRLF.length;
      }
      case 'trailers': {
        const at = buf.indexOf(CRLF);
        if (at < 0) return buf.length > MAX_HEAD_BYTES ? this.#fail('The response trailers are too large.') : -1;
        if (at === 0) this.#state = 'done';
        return at + CRLF.length;
      }
      default:
        return -1;
    }
  }

  #readHead(head: string): void {
    const lines = head.split('\r\n');
    const match = STATUS_LINE.exec(lines[0]!);
    if (!match) this.#fail('The response does not start with an HTTP/1.x status line.');
    const minor = match[1];
    const status = Number(match[2]);
    const headers: Record<string, string | undefined> = {};
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0) this.#fail('A response header line is not valid.');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      const before = headers[name];
      headers[name] = before === undefined ? value : `${before}, ${value}`;
    }
    // Interim answers (100 Continue, 103 Early Hints) come before the real one.
    if (status >= 100 && status < 200) {
      if (status === 101) this.#fail('The server switched protocols.');
      return;
    }
    this.#status = status;
    this.#headers = headers;
    const connection = (headers['connection'] ?? '').toLowerCase();
    this.#keepAlive = minor === '1' ? !/\bclose\b/.test(connection) : /\bkeep-alive\b/.test(connection);
    const transferEncoding = headers['transfer-encoding'];
    const contentLength = headers['content-length'];
    if (status === 204 || status === 304) {
      this.#state = 'done';
    } else if (transferEncoding !== undefined) {
      if (/(?:^|,)\s*chunked\s*$/i.test(transferEncoding)) this.#state = 'chunk-size';
      else this.#untilClose();
    } else if (contentLength !== undefined) {
      // Repeated equal values (`6, 6`) are allowed; differing ones are not.
      const values = new Set(contentLength.split(',').map((v) => v.trim()));
      const only = [...values][0]!;
      if (values.size !== 1 || !DIGITS.test(only)) this.#fail('The response Content-Length is not valid.');
      this.#remaining = Number(only);
      this.#state = this.#remaining === 0 ? 'done' : 'length';
    } else {
      this.#untilClose();
    }
  }

  #untilClose(): void {
    this.#state = 'until-close';
    this.#keepAlive = false;
  }

  #keep(bytes: Buffer): void {
    const room = this.#maxBodyBytes - this.#keptBytes;
    if (room <= 0) return;
    const kept = bytes.length <= room ? bytes : bytes.subarray(0, room);
    this.#kept.push(kept);
    this.#keptBytes += kept.length;
  }

  #result(): ParsedResponse {
    const body = this.#kept.length === 1 ? this.#kept[0]!.toString('utf8') : Buffer.concat(this.#kept).toString('utf8');
    return { status: this.#status, headers: this.#headers, body, keepAlive: this.#keepAlive };
  }

  #fail(message: string): never {
    throw new Error(message);
  }
}
