import assert from 'node:assert/strict';
import dc from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createHttpSender, parseRetryAfter, classify, RESPONSE_BODY_WAIT_MS } from '../../src/destinations/http/http-sender.js';
import type { SendRequest, SendResult, WebhookSender } from '../../src/destinations/http/sender.js';
import { ManualClock } from '../../src/util/clock.js';
import { turn, until } from '../helpers/until.js';
import { within } from '../helpers/within.js';

const fixture = (name: string): Buffer => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

interface Receiver {
  url: string;
  port: number;
  requests: Received[];
  connections: number;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

const answer200: Handler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('ok');
};

/** A loopback HTTP(S) receiver that records every request its handler saw. */
async function startReceiver(handler: Handler = answer200, tls?: { key: Buffer; cert: Buffer }): Promise<Receiver> {
  const requests: Received[] = [];
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  };
  const server = tls ? createHttpsServer(tls, listener) : createHttpServer(listener);
  const state = { connections: 0 };
  server.on(tls ? 'secureConnection' : 'connection', () => state.connections++);
  // TLS handshake failures are expected in some tests; they must not crash the process.
  server.on('tlsClientError', () => {});
  await within(10_000, 'the test server to listen', new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    requests,
    get connections() {
      return state.connections;
    },
    close: () =>
      within(
        10_000,
        'the test server to close',
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
      ),
  };
}

// Client sockets the senders open, seen through Node's diagnostics channel, so that a test can
// tell when the sender has read what a receiver wrote.
const clientSockets: Socket[] = [];
const onClientSocket = (message: unknown): void => void clientSockets.push((message as { socket: Socket }).socket);
dc.subscribe('net.client.socket', onClientSocket);
after(() => dc.unsubscribe('net.client.socket', onClientSocket));

/**
 * Resolves once the sender has read every byte written so far on `res`'s connection. The
 * sender parses what it reads in the same turn, so by then it has acted on it: a test moves
 * a manual clock only after the sender has seen the head it is about.
 */
async function readBySender(res: ServerResponse): Promise<void> {
  const server = res.socket!;
  await until(() => {
    const client = clientSockets.find((socket) => socket.localPort === server.remotePort);
    return client !== undefined && client.bytesRead >= server.bytesWritten;
  }, 'the sender to read what the receiver wrote');
}

function post(url: string, extra: Partial<SendRequest> = {}): SendRequest {
  return {
    url,
    headers: { 'content-type': 'application/json', 'user-agent': 'Ferry/test' },
    body: Buffer.from('{"version":1,"type":"track","event":"Test"}'),
    timeoutMs: 5000,
    ...extra,
  };
}

/** One request through `sender` to a receiver that answers with `handler`, closed after. */
async function sendThrough(sender: WebhookSender, handler: Handler, extra: Partial<SendRequest> = {}): Promise<SendResult> {
  const receiver = await startReceiver(handler);
  try {
    return await sender.send(post(receiver.url, extra));
  } finally {
    await receiver.close();
  }
}

// Its time limits run on a manual clock: a test that waits for one moves the clock.
describe('createHttpSender over plain HTTP', () => {
  let sender: WebhookSender;
  const clock = new ManualClock();
  before(() => {
    sender = createHttpSender({ allowPrivateNetworks: true, allowedNetworks: [], clock, timers: clock.timers });
  });
  after(() => sender.close());

  it('POSTs the exact body bytes and the given headers, and reports a 2xx as success', async () => {
    const receiver = await startReceiver();
    try {
      const body = Buffer.concat([Buffer.from('{"name":"Zoë ☃"}'), Buffer.from([0x00, 0xff, 0x0a])]);
      const result = await sender.send(
        post(`${receiver.url}/hooks/ferry?team=growth`, {
          headers: {
            'Content-Type': 'application/json',
            'User-Agent': 'Ferry/0.1.0',
            'X-Signature': 'abc123',
            'X-Team': 'growth',
          },
          body,
        }),
      );
      assert.equal(result.statusCode, 200);
      assert.equal(result.errorClass, undefined);
      assert.equal(result.errorMessage, undefined);
      assert.equal(result.responseBody, 'ok');
      assert.equal(result.url, `${receiver.url}/hooks/ferry?team=growth`);
      assert.equal(result.startedAtMs, clock.now());
      assert.equal(result.latencyMs, 0);

      assert.equal(receiver.requests.length, 1);
      const [got] = receiver.requests as [Received];
      assert.equal(got.method, 'POST');
      assert.equal(got.url, '/hooks/ferry?team=growth');
      assert.deepEqual(got.body, body);
      assert.equal(got.headers['content-type'], 'application/json');
      assert.equal(got.headers['user-agent'], 'Ferry/0.1.0');
      assert.equal(got.headers['x-signature'], 'abc123');
      assert.equal(got.headers['x-team'], 'growth');
      assert.equal(got.headers['content-length'], String(body.length));
      assert.equal(got.headers.host, `127.0.0.1:${receiver.port}`);
    } finally {
      await receiver.close();
    }
  });

  it('keeps Host and framing headers under its own control', async () => {
    const receiver = await startReceiver();
    try {
      const result = await sender.send(post(receiver.url, { headers: { host: 'internal.example', 'content-length': '1', connection: 'close' } }));
      assert.equal(result.statusCode, 200);
      const [got] = receiver.requests as [Received];
      assert.equal(got.headers.host, `127.0.0.1:${receiver.port}`);
      assert.equal(got.headers['content-length'], String(post('').body.length));
    } finally {
      await receiver.close();
    }
  });

  it('reuses one keep-alive connection for consecutive requests, also after a response body over 1 KB', async () => {
    const receiver = await startReceiver((_req, res) => res.end('y'.repeat(4096)));
    try {
      for (let i = 0; i < 3; i++) {
        assert.equal((await sender.send(post(receiver.url))).statusCode, 200);
        // undici marks the connection free once the parser returns, one turn after the body ends.
        await new Promise((resolve) => setImmediate(resolve));
      }
      assert.equal(receiver.requests.length, 3);
      assert.equal(receiver.connections, 1);
    } finally {
      await receiver.close();
    }
  });

  for (const status of [500, 503, 404, 410]) {
    it(`reports ${status} as an http failure with its status code`, async () => {
      const receiver = await startReceiver((_req, res) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end('{"error":"nope"}');
      });
      try {
        const result = await sender.send(post(receiver.url));
        assert.equal(result.statusCode, status);
        assert.equal(result.errorClass, 'http');
        assert.equal(result.errorMessage, `HTTP ${status}`);
        assert.equal(result.responseBody, '{"error":"nope"}');
        assert.equal(result.retryAfterMs, undefined);
      } finally {
        await receiver.close();
      }
    });
  }

  for (const status of [301, 302, 307, 308]) {
    it(`does not follow a ${status} redirect: the target receives nothing`, async () => {
      const target = await startReceiver();
      const receiver = await startReceiver((_req, res) => {
        res.writeHead(status, { location: `${target.url}/elsewhere` });
        res.end();
      });
      try {
        const result = await sender.send(post(receiver.url));
        assert.equal(result.statusCode, status);
        assert.equal(result.errorClass, 'http');
        assert.match(result.errorMessage ?? '', /not followed/);
        assert.equal(receiver.requests.length, 1);
        assert.equal(target.requests.length, 0);
      } finally {
        await receiver.close();
        await target.close();
      }
    });
  }

  it('reads Retry-After in seconds on a 429', async () => {
    const receiver = await startReceiver((_req, res) => {
      res.writeHead(429, { 'retry-after': '120' });
      res.end();
    });
    try {
      const result = await sender.send(post(receiver.url));
      assert.equal(result.statusCode, 429);
      assert.equal(result.errorClass, 'http');
      assert.equal(result.retryAfterMs, 120_000);
    } finally {
      await receiver.close();
    }
  });

  it('reads Retry-After as an HTTP date relative to the injected clock', async () => {
    const result = await sendThrough(sender, (_req, res) => {
      res.writeHead(429, { 'retry-after': new Date(clock.now() + 90_000).toUTCString() });
      res.end();
    });
    assert.equal(result.statusCode, 429);
    assert.equal(result.retryAfterMs, 90_000);
  });

  it('reads Retry-After on a 503 too', async () => {
    const result = await sendThrough(sender, (_req, res) => {
      res.writeHead(503, { 'retry-after': '7' });
      res.end('maintenance');
    });
    assert.equal(result.statusCode, 503);
    assert.equal(result.retryAfterMs, 7000);
  });

  it('gives up with errorClass timeout when no response head arrives within timeoutMs of its clock', async () => {
    const receiver = await startReceiver(() => {
      // never answers
    });
    try {
      let settled = false;
      const pending = sender.send(post(receiver.url, { timeoutMs: 5000 })).finally(() => (settled = true));
      await until(() => receiver.requests.length === 1, 'the request to arrive');
      clock.advance(4999);
      await turn();
      assert.equal(settled, false, 'not a millisecond early');
      clock.advance(1);
      const result = await pending;
      assert.equal(result.errorClass, 'timeout');
      assert.equal(result.errorMessage, 'no response head within 5000 ms');
      assert.equal(result.statusCode, undefined);
      assert.equal(result.latencyMs, 5000);
    } finally {
      await receiver.close();
    }
  });

  it('keeps the first KB of a large response body and discards the rest', async () => {
    const result = await sendThrough(sender, (_req, res) => res.end('x'.repeat(1024 * 1024)));
    assert.equal(result.statusCode, 200);
    assert.equal(result.responseBody, 'x'.repeat(1024));
  });

  it('does not split a multi-byte character at the 1 KB cut', async () => {
    const result = await sendThrough(sender, (_req, res) => res.end(`a${'é'.repeat(600)}`));
    assert.equal(result.responseBody, `a${'é'.repeat(511)}`);
  });

  it('keeps a whole short body as UTF-8, in however many chunks it came, bad bytes as U+FFFD', async () => {
    const result = await sendThrough(sender, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      // A character split across two writes (the second once the first has left for the
      // socket), then a byte that is not UTF-8. However the bytes are read, one chunk or two,
      // the whole body is decoded as one.
      const euro = Buffer.from('€');
      res.write(Buffer.concat([Buffer.from('ok '), euro.subarray(0, 1)]), () =>
        res.end(Buffer.concat([euro.subarray(1), Buffer.from([0xff]), Buffer.from(' é')])),
      );
    });
    assert.equal(result.statusCode, 200);
    assert.equal(result.responseBody, 'ok €\uFFFD é');
  });

  it('does not wait forever for a response body that never ends: the status stands after the body wait', async () => {
    let response: ServerResponse | undefined;
    const receiver = await startReceiver((_req, res) => {
      response = res;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
    try {
      let settled = false;
      const pending = sender.send(post(receiver.url)).finally(() => (settled = true));
      await until(() => response !== undefined, 'the request to arrive');
      await readBySender(response!);
      clock.advance(RESPONSE_BODY_WAIT_MS - 1);
      await turn();
      assert.equal(settled, false, 'the body wait is not over');
      clock.advance(1);
      const result = await pending;
      assert.equal(result.statusCode, 200);
      assert.equal(result.errorClass, undefined);
      assert.equal(result.responseBody, 'partial');
    } finally {
      await receiver.close();
    }
  });

  it('cuts a response body that never ends at full speed: 1 KB kept, at most 64 KB more read, then the socket is dropped', async () => {
    let written = 0;
    let closed = false;
    const receiver = await startReceiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.on('close', () => (closed = true));
      const chunk = Buffer.alloc(16 * 1024, 'y');
      // Endless as far as the sender can tell; bounded here, at 64 MB, so the test cannot run away.
      const pump = (): void => {
        while (!closed && written < 64 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      pump();
    });
    try {
      const result = await sender.send(post(receiver.url));
      assert.equal(result.statusCode, 200);
      assert.equal(result.errorClass, undefined);
      assert.equal(result.responseBody, 'y'.repeat(1024));
      await until(() => closed, 'the receiver to see its connection dropped');
      assert.ok(written < 64 * 1024 * 1024, `the receiver was cut off before its own bound (wrote ${written} bytes)`);
    } finally {
      await receiver.close();
    }
  });

  it('ends the whole exchange within timeoutMs: a head that comes late leaves its body only what is left of it', async () => {
    let response: ServerResponse | undefined;
    const receiver = await startReceiver((_req, res) => (response = res));
    try {
      let settled = false;
      const pending = sender.send(post(receiver.url, { timeoutMs: 5000 })).finally(() => (settled = true));
      await until(() => response !== undefined, 'the request to arrive');
      clock.advance(4800);
      response!.writeHead(503, { 'content-type': 'text/plain' });
      response!.write('trick');
      await readBySender(response!);
      clock.advance(199);
      await turn();
      assert.equal(settled, false, '4,999 ms: not over yet');
      clock.advance(1);
      const result = await pending;
      assert.equal(result.statusCode, 503, 'the status stands');
      assert.equal(result.responseBody, 'trick');
      assert.equal(result.latencyMs, 4800, 'latency is to the head');
    } finally {
      await receiver.close();
    }
  });

  it('takes an informational 1xx head for what it is: the final status counts, even after the body wait', async () => {
    // A 50 ms body wait, and the final head 100 ms after a 103: had the 103 been taken for the
    // answer, the attempt would end as "HTTP 103" once the body wait ran out.
    const quick = createHttpSender({ allowPrivateNetworks: true, allowedNetworks: [], clock, timers: clock.timers, responseBodyWaitMs: 50 });
    let response: ServerResponse | undefined;
    const receiver = await startReceiver((_req, res) => {
      response = res;
      res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
    });
    try {
      const pending = quick.send(post(receiver.url, { timeoutMs: 2000 }));
      await until(() => response !== undefined, 'the request to arrive');
      await readBySender(response!);
      clock.advance(100);
      response!.writeHead(201, { 'content-type': 'text/plain' });
      response!.end('created');
      const result = await pending;
      assert.equal(result.statusCode, 201);
      assert.equal(result.errorClass, undefined);
      assert.equal(result.responseBody, 'created');
    } finally {
      await receiver.close();
      await quick.close();
    }
  });

  it('reports a response body as received, NUL included (the stores decide how to keep it)', async () => {
    const result = await sendThrough(sender, (_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('bad\u0000byte');
    });
    assert.equal(result.statusCode, 500);
    assert.equal(result.responseBody, 'bad\u0000byte');
  });

  it('refuses a non-positive responseBodyWaitMs at construction', () => {
    assert.throws(() => createHttpSender({ allowPrivateNetworks: true, allowedNetworks: [], responseBodyWaitMs: 0 }), RangeError);
  });

  it('reports a refused connection as connect', async () => {
    const closed = await startReceiver();
    await closed.close();
    const result = await sender.send(post(closed.url));
    assert.equal(result.errorClass, 'connect');
    assert.equal(result.statusCode, undefined);
    assert.match(result.errorMessage ?? '', /ECONNREFUSED/);
  });

  it('reports a connection closed before any response as connect', async () => {
    const result = await sendThrough(sender, (req) => req.socket.destroy());
    assert.equal(result.errorClass, 'connect');
  });

  it('reports an unresolvable host name as dns', async () => {
    const result = await sender.send(post('http://no-such-host.ferry-test.invalid/hooks'));
    assert.equal(result.errorClass, 'dns');
  });

  const invalidUrls = ['not a url', 'ftp://127.0.0.1/hooks', 'file:///etc/passwd', 'http://user:secret@127.0.0.1/hooks'];
  for (const url of invalidUrls) {
    it(`refuses ${JSON.stringify(url)} as invalid_url`, async () => {
      const result = await sender.send(post(url));
      assert.equal(result.errorClass, 'invalid_url');
      assert.ok(result.errorMessage);
    });
  }

  it('returns a protocol failure instead of throwing for a header value with CR/LF, sending nothing', async () => {
    const receiver = await startReceiver();
    try {
      const result = await sender.send(post(receiver.url, { headers: { 'x-team': 'a\r\nx-injected: 1' } }));
      assert.equal(result.errorClass, 'protocol');
      assert.equal(receiver.requests.length, 0);
    } finally {
      await receiver.close();
    }
  });
});

describe('createHttpSender over HTTPS', () => {
  it('refuses a self-signed certificate with tls before any request is sent', async () => {
    const receiver = await startReceiver(answer200, { key: fixture('self-signed.key'), cert: fixture('self-signed.crt') });
    const sender = createHttpSender({ allowPrivateNetworks: true, allowedNetworks: [] });
    try {
      const result = await sender.send(post(receiver.url));
      assert.equal(result.errorClass, 'tls');
      assert.equal(result.statusCode, undefined);
      assert.match(result.errorMessage ?? '', /self[- ]signed/i);
      assert.equal(receiver.requests.length, 0);
      assert.equal(receiver.connections, 0);
    } finally {
      await sender.close();
      await receiver.close();
    }
  });

  it('refuses a self-signed certificate even when another CA is trusted', async () => {
    const receiver = await startReceiver(answer200, { key: fixture('self-signed.key'), cert: fixture('self-signed.crt') });
    const sender = createHttpSender({ allowPrivateNetworks: true, allowedNetworks: [], ca: fixture('ca.crt') });
    try {
      const result = await sender.send(post(receiver.url));
      assert.equal(result.errorClass, 'tls');
      assert.equal(receiver.requests.length, 0);
    } finally {
      await sender.close();
      await receiver.close();
    }
  });

  it('refuses a certificate from an untrusted private CA with tls', async () => {
    const receiver = await startReceiver(answer200, { key: fixture('localhost.key'), cert: fixture('localhost.crt') });
    const sender = createHttpSender({ allowPrivateNetworks: true, allowedNetworks: [] });
    try {
      const result = await sender.send(post(receiver.url));
      assert.equal(result.errorClass, 'tls');
      assert.equal(receiver.requests.length, 0);
    } finally {
      await sender.close();
      await receiver.close();
    }
  });

  it('delivers to a receiver whose certificate is signed by the trusted `ca`, by IP and by host name', async () => {
    const receiver = await startReceiver(answer200, { key: fixture('localhost.key'), cert: fixture('localhost.crt') });
    const sender = createHttpSender({ allowPrivateNetworks: true, allowedNetworks: [], ca: [fixture('ca.crt')] });
    try {
      const byIp = await sender.send(post(`https://127.0.0.1:${receiver.port}/hooks`));
      assert.equal(byIp.statusCode, 200);
      assert.equal(byIp.errorClass, undefined);
      const byName = await sender.send(post(`https://localhost:${receiver.port}/hooks`));
      assert.equal(byName.statusCode, 200);
      assert.equal(byName.errorClass, undefined);
      assert.equal(receiver.requests.length, 2);
      assert.deepEqual(receiver.requests[0]?.body, post('').body);
    } finally {
      await sender.close();
      await receiver.close();
    }
  });
});

describe('createHttpSender lifecycle', () => {
  it('answers sends after close() with a failure value instead of throwing', async () => {
    const sender = createHttpSender({ allowPrivateNetworks: true, allowedNetworks: [] });
    await sender.close();
    const result = await sender.send(post('http://127.0.0.1:9/'));
    assert.equal(result.errorClass, 'protocol');
  });

  it('refuses a malformed allowedNetworks entry at construction', () => {
    assert.throws(() => createHttpSender({ allowPrivateNetworks: false, allowedNetworks: ['10.0.0.0/33'] }), /10\.0\.0\.0\/33/);
    assert.throws(() => createHttpSender({ allowPrivateNetworks: false, allowedNetworks: ['intranet'] }), RangeError);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00.000Z');
  const cases: Array<[string | undefined, number | undefined]> = [
    [undefined, undefined],
    ['0', 0],
    ['30', 30_000],
    [' 120 ', 120_000],
    ['Thu, 01 Jan 2026 00:01:30 GMT', 90_000],
    ['Wed, 31 Dec 2025 23:00:00 GMT', 0],
    ['1.5', undefined],
    ['-5', undefined],
    ['soon', undefined],
    ['', undefined],
  ];
  for (const [value, expected] of cases) {
    it(`${JSON.stringify(value)} -> ${String(expected)}`, () => {
      assert.equal(parseRetryAfter(value, now), expected);
    });
  }
});

describe('classify', () => {
  const err = (code: string): Error => Object.assign(new Error(code), { code });
  const cases: Array<[unknown, string]> = [
    [err('ENOTFOUND'), 'dns'],
    [err('EAI_AGAIN'), 'dns'],
    [err('ECONNREFUSED'), 'connect'],
    [err('ECONNRESET'), 'connect'],
    [err('EHOSTUNREACH'), 'connect'],
    [err('ENETUNREACH'), 'connect'],
    [err('UND_ERR_SOCKET'), 'connect'],
    [err('DEPTH_ZERO_SELF_SIGNED_CERT'), 'tls'],
    [err('SELF_SIGNED_CERT_IN_CHAIN'), 'tls'],
    [err('UNABLE_TO_VERIFY_LEAF_SIGNATURE'), 'tls'],
    [err('ERR_TLS_CERT_ALTNAME_INVALID'), 'tls'],
    [err('CERT_HAS_EXPIRED'), 'tls'],
    [err('ERR_SSL_WRONG_VERSION_NUMBER'), 'tls'],
    [err('UND_ERR_CONNECT_TIMEOUT'), 'timeout'],
    [err('UND_ERR_HEADERS_TIMEOUT'), 'timeout'],
    [err('ERR_FERRY_SSRF_REFUSED'), 'ssrf'],
    [new AggregateError([err('ECONNREFUSED'), err('ECONNREFUSED')], ''), 'connect'],
    [Object.assign(new TypeError('fetch failed'), { cause: err('ENOTFOUND') }), 'dns'],
    [err('HPE_INVALID_CONSTANT'), 'protocol'],
    [new Error('something else'), 'protocol'],
    ['a string', 'protocol'],
  ];
  for (const [error, expected] of cases) {
    const name = error instanceof Error ? ((error as { code?: string }).code ?? error.constructor.name) : String(error);
    it(`${name} -> ${expected}`, () => {
      assert.equal(classify(error), expected);
    });
  }
});
