import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, it } from 'node:test';
import { Analytics, createSocketTransport, type Transport, type TransportRequest } from '@ferry/analytics';
import { onAbortKey } from '../src/transport/abort-hook.js';
import { Http1ResponseParser } from '../src/transport/http1-response-parser.js';
import { within } from './support/deadline.js';
import { SinkServer } from './support/sink-server.js';

/** Feeds `text` to a parser one byte at a time and returns what it gave back at the end. */
function parseBytewise(text: string, maxBody = 65_536) {
  const parser = new Http1ResponseParser(maxBody);
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i++) {
    const done = parser.feed(bytes.subarray(i, i + 1));
    if (done) return { done, at: i + 1, of: bytes.length };
  }
  return { done: undefined, parser };
}

describe('HTTP/1.1 response parser', () => {
  it('reads a content-length response fed one byte at a time, completing on its last byte', () => {
    const r = parseBytewise('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{"success":true}');
    assert.equal(r.at, r.of);
    assert.deepEqual(r.done, {
      status: 200,
      headers: { 'content-type': 'application/json', 'content-length': '16' },
      body: '{"success":true}',
      keepAlive: true,
    });
  });

  it('reads a chunked response with chunk extensions and trailers, one byte at a time', () => {
    const r = parseBytewise('HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\n{"a":\r\nB\r\n"é-chunk"}\r\n0\r\nX-Trailer: 1\r\n\r\n');
    assert.equal(r.at, r.of);
    assert.equal(r.done?.status, 400);
    assert.equal(r.done?.body, '{"a":"é-chunk"}');
    assert.equal(r.done?.keepAlive, true);
  });

  it('skips interim responses and joins repeated headers', () => {
    const r = parseBytewise('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy\r\nRetry-After: 3\r\nVia: a\r\nvia: b\r\ncontent-length: 0\r\n\r\n');
    assert.equal(r.done?.status, 503);
    assert.equal(r.done?.headers['retry-after'], '3');
    assert.equal(r.done?.headers['via'], 'a, b');
    assert.equal(r.done?.body, '');
  });

  it('reads a 204 without a body, and tells from Connection and the version whether the connection may be reused', () => {
    const noContent = parseBytewise('HTTP/1.1 204 No Content\r\n\r\n');
    assert.equal(noContent.at, noContent.of);
    assert.deepEqual([noContent.done?.body, noContent.done?.keepAlive], ['', true]);
    assert.equal(parseBytewise('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}').done?.keepAlive, false);
    assert.equal(parseBytewise('HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}').done?.keepAlive, false);
    assert.equal(parseBytewise('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}').done?.keepAlive, true);
  });

  it('reads a body without length until the connection ends, and never reuses that connection', () => {
    const r = parseBytewise('HTTP/1.1 200 OK\r\n\r\n{"success":');
    assert.equal(r.done, undefined);
    r.parser!.feed(Buffer.from('true}'));
    assert.deepEqual(r.parser!.end(), { status: 200, headers: {}, body: '{"success":true}', keepAlive: false });
  });

  it('keeps at most the byte limit of a body and still reads it to its end', () => {
    const r = parseBytewise(`HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789`, 4);
    assert.equal(r.at, r.of);
    assert.equal(r.done?.body, '0123');
  });

  it('returns a complete response followed by stray bytes, marked not reusable', () => {
    const parser = new Http1ResponseParser(100);
    assert.deepEqual(parser.feed(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok\r\n')), {
      status: 200,
      headers: { 'content-length': '2' },
      body: 'ok',
      keepAlive: false,
    });
  });

  it('throws for what is not a valid response, or ends too soon', () => {
    const bad = [
      'SMTP ready\r\n\r\n',
      'HTTP/1.1 200 OK\r\nno colon here\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY',
      'HTTP/1.1 101 Switching Protocols\r\n\r\n',
    ];
    for (const text of bad) {
      assert.throws(() => new Http1ResponseParser(100).feed(Buffer.from(text, 'latin1')), Error, JSON.stringify(text));
    }
    const cut = new Http1ResponseParser(100);
    assert.equal(cut.feed(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}')), undefined);
    assert.throws(() => cut.end(), /closed before the response was complete/);
  });
});

/**
 * A loopback server speaking raw bytes: each request (head and Content-Length body) read from
 * a connection is answered by `answer`, which writes whatever it likes to the socket.
 */
class RawServer {
  connections = 0;
  closed = 0;
  requests: string[] = [];
  /** The bytes of each request, as they came. */
  raw: Buffer[] = [];
  answer: (socket: Socket, index: number) => void = (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 16\r\n\r\n{"success":true}');
  #server: Server = createServer((socket) => this.#onConnection(socket));
  #sockets = new Set<Socket>();
  #waiters: Array<{ test: () => boolean; resolve: () => void }> = [];
  url = '';

  /** Resolves once `test` holds, checked after every connection, request and close. */
  until(test: () => boolean, what: string): Promise<void> {
    if (test()) return Promise.resolve();
    return within(new Promise((resolve) => this.#waiters.push({ test, resolve })), what);
  }

  #check(): void {
    this.#waiters = this.#waiters.filter((w) => (w.test() ? (w.resolve(), false) : true));
  }

  static async start(): Promise<RawServer> {
    const s = new RawServer();
    await new Promise<void>((resolve) => s.#server.listen(0, '127.0.0.1', resolve));
    s.url = `http://127.0.0.1:${(s.#server.address() as { port: number }).port}/v1/batch`;
    return s;
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #onConnection(socket: Socket): void {
    this.connections++;
    this.#sockets.add(socket);
    socket.on('close', () => {
      this.closed++;
      this.#sockets.delete(socket);
      this.#check();
    });
    socket.on('error', () => {});
    let buf = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.toString('latin1', 0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        this.requests.push(buf.toString('utf8', 0, end + 4 + length));
        this.raw.push(buf.subarray(0, end + 4 + length));
        buf = buf.subarray(end + 4 + length);
        this.answer(socket, this.requests.length - 1);
        this.#check();
      }
    });
  }
}

const post = (url: string, body: string | Uint8Array = '{"batch":[]}', extra: Partial<TransportRequest> = {}): TransportRequest => ({
  url,
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body,
  signal: new AbortController().signal,
  ...extra,
});

describe('socket transport', () => {
  let server: RawServer;
  let transport: Transport;
  afterEach(async () => {
    transport?.close?.();
    await server?.close();
  });

  it('writes one HTTP/1.1 request with Host, Content-Length and the given headers, and reuses its connection', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    const headers = { authorization: 'Basic a2V5Og==', 'content-type': 'application/json' };
    for (const body of ['{"batch":["é"]}', '{"batch":[]}', new TextEncoder().encode('{"batch":[1]}')]) {
      const res = await within(transport.send(post(server.url, body, { headers })), 'a response');
      assert.deepEqual(res, { status: 200, headers: { 'content-length': '16' }, body: '{"success":true}' });
    }
    assert.equal(server.connections, 1);
    const host = new URL(server.url).host;
    assert.equal(
      server.requests[0],
      `POST /v1/batch HTTP/1.1\r\nhost: ${host}\r\nconnection: keep-alive\r\nauthorization: Basic a2V5Og==\r\ncontent-type: application/json\r\ncontent-length: 16\r\n\r\n{"batch":["é"]}`,
    );
    assert.match(server.requests[2]!, /content-length: 13\r\n\r\n\{"batch":\[1\]\}$/);
  });

  it('opens one connection per concurrent request and keeps each for the next', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    for (let round = 0; round < 3; round++) {
      await within(Promise.all([1, 2, 3].map(() => transport.send(post(server.url)))), 'three concurrent responses');
    }
    assert.equal(server.connections, 3);
    assert.equal(server.requests.length, 9);
  });

  it('reads a chunked answer and a close-delimited one, and opens a new connection after Connection: close', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    server.answer = (s, i) => {
      if (i === 0) s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"s\r\n');
      if (i === 0) s.write('4\r\nx":1\r\n1\r\n}\r\n0\r\n\r\n');
      if (i === 1) s.end('HTTP/1.1 429 Too Many\r\nRetry-After: 2\r\n\r\n{"slow":1}');
      if (i === 2) s.write('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}');
      if (i === 3) s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}');
    };
    assert.equal((await within(transport.send(post(server.url)), 'chunked')).body, '{"sx":1}');
    const slow = await within(transport.send(post(server.url)), 'close-delimited');
    assert.deepEqual([slow.status, slow.headers['retry-after'], slow.body], [429, '2', '{"slow":1}']);
    await within(transport.send(post(server.url)), 'connection: close');
    await within(transport.send(post(server.url)), 'after close');
    assert.equal(server.connections, 3);
  });

  it('rejects when the server drops the connection, refuses it, or answers garbage, and recovers on a new connection', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    server.answer = (s, i) => {
      if (i === 0) s.destroy();
      else if (i === 1) {
        s.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}');
        s.destroy();
      } else if (i === 2) s.write('garbage\r\n\r\n');
      else s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}');
    };
    await assert.rejects(within(transport.send(post(server.url)), 'a dropped connection'));
    await assert.rejects(within(transport.send(post(server.url)), 'a cut response'), /closed before the response was complete/);
    await assert.rejects(within(transport.send(post(server.url)), 'garbage'), /status line/);
    assert.equal((await within(transport.send(post(server.url)), 'a good answer')).status, 200);
    const port = new URL(server.url).port;
    await server.close();
    const fresh = createSocketTransport();
    await assert.rejects(within(fresh.send(post(`http://127.0.0.1:${port}/v1/batch`)), 'a refused connection'), /ECONNREFUSED/);
  });

  it('uses a fresh connection when the server closed the idle one', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    server.answer = (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}', () => s.end());
    await within(transport.send(post(server.url)), 'first');
    await server.until(() => server.closed === 1, 'the server closing the idle connection');
    assert.equal((await within(transport.send(post(server.url)), 'second')).status, 200);
    assert.equal(server.connections, 2);
  });

  it("follows the server's Keep-Alive timeout hint: an idle connection goes a second before the server would close it", async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    server.answer = (s, i) => s.write(`HTTP/1.1 200 OK\r\nKeep-Alive: timeout=${i < 2 ? 1 : 2}\r\nContent-Length: 2\r\n\r\n{}`);
    // timeout=1 leaves no safe idle time: the connection is not reused.
    await within(transport.send(post(server.url)), 'first');
    await within(transport.send(post(server.url)), 'second');
    assert.equal(server.connections, 2);
    // timeout=2: the client itself closes the idle connection after 1 s.
    await within(transport.send(post(server.url)), 'third');
    await server.until(() => server.closed === 3, 'the client closing the idle connection');
    assert.equal(server.connections, 3);
  });

  it('rejects promptly and drops the connection when the signal aborts, before or during the exchange', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    server.answer = () => {};
    const controller = new AbortController();
    const sent = transport.send(post(server.url, '{"batch":[]}', { signal: controller.signal }));
    await server.until(() => server.requests.length === 1, 'the request to arrive');
    controller.abort();
    await assert.rejects(within(sent, 'an aborted request'), /aborted/);
    await assert.rejects(within(transport.send(post(server.url, '{}', { signal: AbortSignal.abort() })), 'an already aborted request'), /aborted/);
    await server.until(() => server.closed === server.connections, 'the server to see every connection closed');
  });

  it('refuses header injection and https: URLs without sending anything', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    await assert.rejects(transport.send(post(server.url, '{}', { headers: { 'x-a': 'b\r\nx-injected: 1' } })), /Invalid value/);
    await assert.rejects(transport.send(post(server.url, '{}', { headers: { 'bad name': 'b' } })), /Invalid header name/);
    await assert.rejects(transport.send(post('https://127.0.0.1:1/v1/batch')), /only http:/);
    assert.equal(server.connections, 0);
  });

  it('refuses header values a latin1 head cannot carry, on both body paths, and writes latin1 values as single bytes', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    // Each character's low byte is CR or LF: written as latin1 they would start a new header line.
    const smuggled = { 'x-v': 'a\u010d\u010aInjected: yes' };
    for (const body of ['{}', new TextEncoder().encode('{}')]) {
      await assert.rejects(transport.send(post(server.url, body, { headers: smuggled })), /Invalid value for header x-v/);
      for (const value of ['a\u0100', 'a\x7f', 'a\x01', 'a\u2028']) {
        await assert.rejects(transport.send(post(server.url, body, { headers: { 'x-v': value } })), /Invalid value/, JSON.stringify(value));
      }
    }
    assert.equal(server.connections, 0);
    const headers = { 'x-v': 'caf\u00e9\tok' };
    await within(transport.send(post(server.url, '{}', { headers })), 'string body');
    await within(transport.send(post(server.url, new TextEncoder().encode('{}'), { headers })), 'byte body');
    for (const raw of server.raw) assert.ok(raw.includes(Buffer.from('\r\nx-v: caf\xe9\tok\r\n', 'latin1')), raw.toString('latin1'));
  });

  it('refuses, whatever their case, the headers the transport sets itself, and sends one Host and one Content-Length', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    const reserved: Array<Record<string, string>> = [
      { Host: 'elsewhere' },
      { 'Content-Length': '0' },
      { CONNECTION: 'close' },
      { 'Transfer-Encoding': 'chunked' },
      { host: 'x' },
    ];
    for (const headers of reserved) {
      await assert.rejects(transport.send(post(server.url, '{}', { headers })), /sets header .* itself/, JSON.stringify(headers));
    }
    assert.equal(server.connections, 0);
    await within(transport.send(post(server.url, '{}', { headers: { 'Content-Type': 'application/json' } })), 'a response');
    const head = server.requests[0]!.toLowerCase();
    assert.equal(head.match(/\r\nhost:/g)?.length, 1);
    assert.equal(head.match(/\r\ncontent-length:/g)?.length, 1);
  });

  it('sends every request of a sequence to a server that answers and closes without Connection: close', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    server.answer = (s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}');
    for (let i = 0; i < 10; i++) assert.equal((await within(transport.send(post(server.url)), `response ${i}`)).status, 200);
  });

  it('sends a request again, once, on a fresh connection when the reused one ends before any byte of the answer', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    // The second request comes on the kept connection, which the server then drops unanswered.
    server.answer = (s, i) => (i === 1 ? s.destroy() : s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}'));
    await within(transport.send(post(server.url)), 'first');
    assert.equal((await within(transport.send(post(server.url)), 'second, retried')).status, 200);
    assert.deepEqual([server.requests.length, server.connections], [3, 2]);
    // On a fresh connection the same loss is an error: no second retry.
    server.answer = (s) => s.destroy();
    await assert.rejects(within(transport.send(post(server.url)), 'a dropped fresh connection'));
  });

  it('returns an answer followed by stray bytes and does not reuse that connection', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    server.answer = (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok\r\n');
    assert.equal((await within(transport.send(post(server.url)), 'first')).body, 'ok');
    assert.equal((await within(transport.send(post(server.url)), 'second')).body, 'ok');
    assert.deepEqual([server.requests.length, server.connections], [2, 2]);
  });

  it('writes the method of each request, though URL and headers object are the same', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    const headers = { 'content-type': 'application/json' };
    await within(transport.send(post(server.url, '{}', { headers })), 'POST');
    await within(transport.send(post(server.url, '{}', { headers, method: 'PUT' as 'POST' })), 'PUT');
    assert.deepEqual(
      server.requests.map((r) => r.slice(0, r.indexOf(' '))),
      ['POST', 'PUT'],
    );
  });

  it("calls the abort hook's remover when the attempt was already aborted", async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    let removed = 0;
    const request = {
      ...post(server.url),
      [onAbortKey]: (fn: () => void) => {
        fn();
        return () => removed++;
      },
    };
    await assert.rejects(within(transport.send(request), 'an already aborted request'), /aborted/);
    assert.equal(removed, 1);
  });

  it('close() ends idle connections, which never hold the process open', async () => {
    server = await RawServer.start();
    transport = createSocketTransport();
    await within(Promise.all([transport.send(post(server.url)), transport.send(post(server.url))]), 'two responses');
    transport.close?.();
    await server.until(() => server.closed === 2, 'both connections closed');
  });
});

describe('the client on its default transport', () => {
  let sink: SinkServer;
  afterEach(async () => sink?.close());

  it('delivers every message of a burst exactly once in batches of at most flushAt', async () => {
    sink = await SinkServer.start();
    const client = new Analytics('wk', { endpoint: sink.url });
    const ids = new Set<string>();
    for (let i = 0; i < 1_000; i++) ids.add(client.track({ userId: `u${i}`, event: 'Burst' }));
    assert.equal((await within(client.close(), 'close')).delivered, 1_000);
    assert.deepEqual(new Set(sink.accepted.map((m) => m['messageId'])), ids);
    assert.equal(sink.accepted.length, 1_000);
    assert.ok(sink.requests.every((r) => r.json.batch.length <= 20));
  });
});
