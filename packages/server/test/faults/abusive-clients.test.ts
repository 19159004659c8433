/**
 * Slow and abusive clients against a real Ferry on loopback: slow headers and slow bodies
 * (raw sockets trickling bytes), many idle connections, oversized headers. Meanwhile a normal
 * client's requests must still succeed promptly.
 *
 * Ferry does not expose its HTTP server timeouts as options (they are fixed in app.ts:
 * requestTimeout 30 s, connectionTimeout 60 s, keepAliveTimeout 65 s, with Node's
 * headersTimeout 60 s and a 30 s connections-checking interval), so the default form checks
 * that those bounds are in force and that abusers cost other clients nothing, and the long
 * form (FERRY_FAULTS_LONG=1) waits out the real timeouts to see the server close every abuser.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { startFerry, testConfig, webhooksDestination, writeKey, type TestFerry } from '../helpers/ferry.js';
import { basicAuth, longForm, within } from './support.js';

let ferry: TestFerry;
let port: number;
const sockets = new Set<Socket>();
const timers = new Set<NodeJS.Timeout>();

before(async () => {
  ferry = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]), { deliver: false });
  port = Number(new URL(ferry.url).port);
});
after(async () => {
  for (const t of timers) clearInterval(t);
  for (const s of sockets) s.destroy();
  await ferry.stop();
});

/** A raw TCP connection to the server, tracked so that the suite always cleans up. */
async function openSocket(): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  sockets.add(socket);
  socket.on('error', () => {}); // a reset by the server is an expected outcome here
  socket.on('close', () => sockets.delete(socket));
  await once(socket, 'connect');
  return socket;
}

/** What the server did with an abusive socket: when it closed it and what it answered first. */
function watch(socket: Socket) {
  const openedAt = Date.now();
  let received = '';
  socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
  const closed = new Promise<{ afterMs: number; response: string }>((resolve) =>
    socket.on('close', () => resolve({ afterMs: Date.now() - openedAt, response: received.split('\r\n')[0] ?? '' })),
  );
  return { closed, received: () => received };
}

/** Writes `bytes` one at a time every `everyMs`, for as long as the socket lives (bounded). */
function trickle(socket: Socket, bytes: string, everyMs: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= bytes.length) {
      clearInterval(timer);
      timers.delete(timer);
      return;
    }
    socket.write(bytes[i++]!);
  }, everyMs);
  timers.add(timer);
}

/** A normal client: `n` small batches and health checks; returns the slowest round trip. */
async function normalClient(n: number, tag: string): Promise<number> {
  let slowest = 0;
  for (let i = 0; i < n; i++) {
    const t0 = Date.now();
    const res = await ferry.send('/v1/batch', { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: `${tag}-${i}` }] });
    assert.equal(res.status, 200, `normal request ${i} while abused`);
    const health = await fetch(ferry.url + '/health');
    assert.equal(health.status, 200);
    await health.text();
    slowest = Math.max(slowest, Date.now() - t0);
  }
  return slowest;
}

// Header lines that never end (one byte every 100 ms would take hours to finish these), well under
// the 16 KB header limit within any bound below: only a timeout can end them.
const slowHeaderRequest = `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basicAuth(writeKey)}\r\n${Array.from({ length: 2000 }, (_, i) => `X-Pad-${i}: v\r\n`).join('')}`;
const slowBody = JSON.stringify({ batch: [{ type: 'track', userId: 'slow', event: 'E', messageId: 'slow-body' }] });
const slowBodyHead = `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: ${basicAuth(writeKey)}\r\nContent-Length: ${slowBody.length + 5000}\r\n\r\n`;

test('the HTTP server has finite timeouts and a header size limit in force', () => {
  const server = ferry.ferry.app.server;
  t_bounds(server.requestTimeout, 'requestTimeout', 60_000);
  t_bounds(server.headersTimeout, 'headersTimeout', 60_000);
  t_bounds(server.timeout, 'idle socket timeout (connectionTimeout)', 120_000);
  t_bounds(server.keepAliveTimeout, 'keepAliveTimeout', 120_000);
  assert.ok(server.maxHeadersCount === null || server.maxHeadersCount > 0);
});
function t_bounds(value: number, name: string, max: number) {
  assert.ok(Number.isFinite(value) && value > 0 && value <= max, `${name} is ${value} ms; it must be finite, non-zero and at most ${max} ms`);
}

test('oversized headers (over 16 KB) are refused with 431 at once, and the connection closed', async () => {
  const socket = await openSocket();
  const seen = watch(socket);
  socket.write(`POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(20 * 1024)}\r\n\r\n`);
  const { response, afterMs } = await within(5_000, 'the 431 answer', seen.closed);
  assert.match(response, /^HTTP\/1\.1 431 /);
  assert.ok(afterMs < 5_000);
  // Many oversized header lines, each small: the total counts.
  const many = await openSocket();
  const seenMany = watch(many);
  many.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n${Array.from({ length: 400 }, (_, i) => `X-H${i}: ${'v'.repeat(60)}\r\n`).join('')}\r\n`);
  assert.match((await within(5_000, 'the 431 answer', seenMany.closed)).response, /^HTTP\/1\.1 431 /);
});

test(`abusers (200 idle connections, slow headers, slow bodies) cost a normal client nothing`, async (t) => {
  const idle = await Promise.all(Array.from({ length: 200 }, () => openSocket()));
  const idleWatch = idle.map(watch);
  const slowHeaders = await Promise.all(Array.from({ length: 5 }, () => openSocket()));
  const slowHeaderWatch = slowHeaders.map(watch);
  for (const s of slowHeaders) trickle(s, slowHeaderRequest, 100);
  const slowBodies = await Promise.all(Array.from({ length: 5 }, () => openSocket()));
  const slowBodyWatch = slowBodies.map(watch);
  for (const s of slowBodies) {
    s.write(slowBodyHead);
    trickle(s, slowBody + ' '.repeat(5000), 100);
  }

  const slowest = await normalClient(longForm ? 50 : 15, 'abused');
  assert.ok(slowest < 2_000, `the slowest normal round trip took ${slowest} ms while abused`);
  t.diagnostic(`slowest normal round trip with 210 abusive sockets open: ${slowest} ms`);

  abusers = { idle: idleWatch, 'slow headers': slowHeaderWatch, 'slow bodies': slowBodyWatch };
  assert.ok(idleWatch.every((w) => w.received() === ''), 'idle sockets were not answered anything (yet)');
});

type Watch = ReturnType<typeof watch>;
let abusers: Record<'idle' | 'slow headers' | 'slow bodies', Watch[]> | undefined;

/**
 * Long form: the server's own timeouts must close every abuser within a bound. Node checks
 * requestTimeout (30 s) and headersTimeout (60 s) every 30 s; idle sockets end after
 * connectionTimeout (60 s). The slow-body case is a known gap (see the todo).
 */
async function closedWithin(t: import('node:test').TestContext, name: keyof NonNullable<typeof abusers>, bound: number) {
  const watches = abusers![name];
  const closed = await Promise.all(watches.map((w) => within(bound, name, w.closed).catch(() => undefined)));
  const open = closed.filter((c) => c === undefined).length;
  const times = closed.flatMap((c) => (c ? [c.afterMs] : []));
  const answers = [...new Set(closed.flatMap((c) => (c ? [c.response || '(closed without an answer)'] : [])))];
  t.diagnostic(`${name}: ${open === 0 ? `all closed by the server, the last after ${Math.max(...times)} ms` : `${open} of ${watches.length} still open after ${bound} ms`}; answers ${JSON.stringify(answers)}`);
  assert.equal(open, 0, `${open} ${name} sockets were still open after ${bound} ms`);
}

test('long form: idle connections and slow headers are closed by the server within 75 s', { skip: !longForm && 'long form only (FERRY_FAULTS_LONG=1): waits out 60 s server timeouts' }, async (t) => {
  await Promise.all([closedWithin(t, 'idle', 75_000), closedWithin(t, 'slow headers', 75_000)]);
});

test(
  'long form: slow bodies are closed by the server within 75 s',
  longForm
    ? { todo: 'known gap: once headers are in, neither requestTimeout nor connectionTimeout ends a body trickled one byte per 100 ms' }
    : { skip: 'long form only (FERRY_FAULTS_LONG=1)' },
  async (t) => {
    const stored = await ferry.admin('GET', '/deliveries?messageId=slow-body');
    assert.equal(stored.json.deliveries.length, 0, 'a body that never finished stored nothing');
    assert.ok((await normalClient(5, 'after')) < 2_000, 'and the normal client is still served');
    // They have been open for more than 60 s already (the test before waited that long).
    await closedWithin(t, 'slow bodies', 15_000);
  },
);
