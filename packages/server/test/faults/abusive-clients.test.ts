/**
 * Slow and abusive clients against a real Ferry on loopback: slow headers and slow bodies
 * (raw sockets trickling bytes), many idle connections, oversized headers. Meanwhile a normal
 * client's requests must still succeed promptly, and the server's own limits (shortened here
 * through the `http` option, as time-based behaviour is tested) close every abuser.
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

const limits = { headersTimeoutMs: 1500, requestTimeoutMs: 3000, bodyTimeoutMs: 1500, connectionsCheckingIntervalMs: 250 };

before(async () => {
  ferry = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]), { deliver: false, http: limits });
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

test('the HTTP server runs with the limits it was given, and the defaults are finite', async () => {
  const server = ferry.ferry.app.server;
  assert.equal(server.requestTimeout, limits.requestTimeoutMs);
  assert.equal(server.headersTimeout, limits.headersTimeoutMs);
  assert.ok(server.maxConnections > 0);
  const { defaultHttpServerSettings } = await import('../../src/config/defaults.js');
  for (const [name, value] of Object.entries(defaultHttpServerSettings))
    assert.ok(Number.isFinite(value) && value > 0 && value <= 120_000 || name === 'maxConnections', `${name} is ${value}`);
});

test('oversized headers (over 16 KB) are refused with 431, and the connection closed', async (t) => {
  const socket = await openSocket();
  const seen = watch(socket);
  socket.write(`POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(20 * 1024)}\r\n\r\n`);
  const { response, afterMs } = await within(5_000, 'the 431 answer', seen.closed);
  assert.match(response, /^HTTP\/1\.1 431 /);
  t.diagnostic(`431 answered and closed after ${afterMs} ms`);
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

  // Every normal request succeeds (normalClient asserts each answer); the time is reported, not judged.
  const slowest = await normalClient(longForm ? 50 : 15, 'abused');
  t.diagnostic(`slowest normal round trip with 210 abusive sockets open: ${slowest} ms`);

  abusers = { idle: idleWatch, 'slow headers': slowHeaderWatch, 'slow bodies': slowBodyWatch };
  assert.ok(idleWatch.every((w) => w.received() === ''), 'idle sockets were not answered anything (yet)');
});

type Watch = ReturnType<typeof watch>;
let abusers: Record<'idle' | 'slow headers' | 'slow bodies', Watch[]> | undefined;

/** Waits until the server has closed every socket of one kind, within a bound. */
async function closedWithin(t: import('node:test').TestContext, name: keyof NonNullable<typeof abusers>, bound: number) {
  const watches = abusers![name];
  const closed = await Promise.all(watches.map((w) => within(bound, name, w.closed).catch(() => undefined)));
  const open = closed.filter((c) => c === undefined).length;
  const times = closed.flatMap((c) => (c ? [c.afterMs] : []));
  const answers = [...new Set(closed.flatMap((c) => (c ? [c.response || '(closed without an answer)'] : [])))];
  t.diagnostic(`${name}: ${open === 0 ? `all closed by the server, the last after ${Math.max(...times)} ms` : `${open} of ${watches.length} still open after ${bound} ms`}; answers ${JSON.stringify(answers)}`);
  assert.equal(open, 0, `${open} ${name} sockets were still open after ${bound} ms`);
  return answers;
}

test('the server closes idle connections, slow headers and slow bodies within its limits', async (t) => {
  const bound = limits.requestTimeoutMs + limits.connectionsCheckingIntervalMs * 4 + 2000;
  await Promise.all([closedWithin(t, 'idle', bound), closedWithin(t, 'slow headers', bound)]);
  const answers = await closedWithin(t, 'slow bodies', bound);
  assert.ok(answers.every((a) => /^HTTP\/1\.1 408 /.test(a)), `slow bodies get a 408 (got ${JSON.stringify(answers)})`);
  const stored = await ferry.admin('GET', '/deliveries?messageId=slow-body');
  assert.equal(stored.json.deliveries.length, 0, 'a body that never finished stored nothing');
  t.diagnostic(`after the abusers: slowest normal round trip ${await normalClient(5, 'after')} ms`);
});
