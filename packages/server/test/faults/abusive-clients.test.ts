/**
 * Slow, abusive and greedy clients against a real Ferry on loopback: slow headers and slow
 * bodies (raw sockets trickling bytes), many idle connections, oversized headers, and
 * thousands of connections that each hold most of a 500 KB body (on ingestion, on paths no
 * route matches, on the admin API without its token), and 128 complete 500 KB batches at once.
 * Meanwhile a normal client's requests must still succeed. Each test starts its own server; the time limits are shortened
 * through the `http` option, as time-based behaviour is tested.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { defaultHttpServerSettings, type HttpServerSettings } from '../../src/config/defaults.js';
import { startFerry, testConfig, webhooksDestination, writeKey, type TestFerry } from '../helpers/ferry.js';
import { keylessShare } from '../../src/ingest/body-budget.js';
import { spawnFerry } from '../helpers/spawn-ferry.js';
import { basicAuth, longForm, within } from './support.js';

const limits = { headersTimeoutMs: 1500, requestTimeoutMs: 3000, bodyTimeoutMs: 1500, connectionsCheckingIntervalMs: 250 };

/** One test's server and the raw sockets and timers it opens, all closed when the test ends. */
async function abusedFerry(t: TestContext, http: Partial<HttpServerSettings> = limits) {
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]), { deliver: false, http });
  const port = Number(new URL(ferry.url).port);
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  t.after(async () => {
    for (const timer of timers) clearInterval(timer);
    for (const s of sockets) s.destroy();
    await ferry.stop();
  });

  /** A raw TCP connection to the server, tracked so that the test always cleans up. */
  async function openSocket(): Promise<Socket> {
    const socket = connect(port, '127.0.0.1');
    sockets.add(socket);
    socket.on('error', () => {}); // a reset by the server is an expected outcome here
    socket.on('close', () => sockets.delete(socket));
    await within(10_000, 'a connection to the server', once(socket, 'connect'));
    return socket;
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

  /** Opens the three kinds of abuser: `idle` sockets that send nothing, five slow headers, five slow bodies. */
  async function openAbusers(idle: number) {
    const idleWatch = (await Promise.all(Array.from({ length: idle }, () => openSocket()))).map(watch);
    const slowHeaders = await Promise.all(Array.from({ length: 5 }, () => openSocket()));
    const slowHeaderWatch = slowHeaders.map(watch);
    for (const s of slowHeaders) trickle(s, slowHeaderRequest, 100);
    const slowBodies = await Promise.all(Array.from({ length: 5 }, () => openSocket()));
    const slowBodyWatch = slowBodies.map(watch);
    for (const s of slowBodies) {
      s.write(slowBodyHead);
      trickle(s, slowBody + ' '.repeat(5000), 100);
    }
    return { idle: idleWatch, 'slow headers': slowHeaderWatch, 'slow bodies': slowBodyWatch };
  }

  return { ferry, openSocket, openAbusers };
}

/** What the server did with an abusive socket: when it closed it and what it answered first. */
function watch(socket: Socket) {
  const openedAt = Date.now();
  let received = '';
  let isClosed = false;
  socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
  const closed = new Promise<{ afterMs: number; response: string }>((resolve) =>
    socket.on('close', () => {
      isClosed = true;
      resolve({ afterMs: Date.now() - openedAt, response: received.split('\r\n')[0] ?? '' });
    }),
  );
  return { closed, received: () => received, isClosed: () => isClosed };
}
type Watch = ReturnType<typeof watch>;

/** A normal client: `n` small batches and health checks, each asserted; returns the slowest round trip. */
async function normalClient(ferry: TestFerry, n: number, tag: string): Promise<number> {
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

test('the HTTP server runs with the limits it was given, and every default limit is finite', async (t) => {
  const { ferry } = await abusedFerry(t);
  const server = ferry.ferry.app.server;
  assert.equal(server.requestTimeout, limits.requestTimeoutMs);
  assert.equal(server.headersTimeout, limits.headersTimeoutMs);
  assert.equal(server.maxConnections, defaultHttpServerSettings.maxConnections);
  for (const [name, value] of Object.entries(defaultHttpServerSettings)) {
    assert.ok(Number.isSafeInteger(value) && value > 0, `${name} is ${value}`);
    if (name.endsWith('Ms')) assert.ok(value <= 120_000, `${name} is ${value} ms`);
  }
});

test('oversized headers (over 16 KB in one line, or in many) are refused with 431, and the connection closed', async (t) => {
  const { openSocket } = await abusedFerry(t);
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

test('with 200 idle connections, slow headers and slow bodies open, every request of a normal client succeeds', async (t) => {
  // Limits far longer than the test, so every abuser is still there while the client is served.
  const { ferry, openAbusers } = await abusedFerry(t, { headersTimeoutMs: 60_000, requestTimeoutMs: 60_000, bodyTimeoutMs: 60_000 });
  const abusers = await openAbusers(200);
  // Every normal request succeeds (normalClient asserts each answer); the time is reported, not judged.
  const slowest = await normalClient(ferry, longForm ? 50 : 15, 'abused');
  t.diagnostic(`slowest normal round trip with 210 abusive sockets open: ${slowest} ms`);
  for (const [name, watches] of Object.entries(abusers))
    assert.ok(
      watches.every((w) => !w.isClosed() && w.received() === ''),
      `every ${name} socket was still open and unanswered while the client was served`,
    );
});

test('the server itself closes idle connections, slow headers and slow bodies (408) within its limits, and a body that never finished stores nothing', async (t) => {
  const { ferry, openAbusers } = await abusedFerry(t);
  const abusers = await openAbusers(20);
  // The request timeout, a few rounds of the checking interval, and slack for a busy machine.
  const bound = limits.requestTimeoutMs + limits.connectionsCheckingIntervalMs * 4 + 2000;
  const closedWithin = async (name: keyof typeof abusers) => {
    const watches: Watch[] = abusers[name];
    const closed = await Promise.all(watches.map((w) => within(bound, name, w.closed).catch(() => undefined)));
    const open = closed.filter((c) => c === undefined).length;
    const times = closed.flatMap((c) => (c ? [c.afterMs] : []));
    const answers = [...new Set(closed.flatMap((c) => (c ? [c.response || '(closed without an answer)'] : [])))];
    t.diagnostic(
      `${name}: ${open === 0 ? `all closed by the server, the last after ${Math.max(...times)} ms` : `${open} of ${watches.length} still open after ${bound} ms`}; answers ${JSON.stringify(answers)}`,
    );
    assert.equal(open, 0, `${open} ${name} sockets were still open after ${bound} ms`);
    return answers;
  };
  const answers = await Promise.all((['idle', 'slow headers', 'slow bodies'] as const).map(async (name) => [name, await closedWithin(name)] as const));
  for (const [name, got] of answers) assert.deepEqual(got, ['HTTP/1.1 408 Request Timeout'], `every ${name} socket got a 408`);
  const stored = await ferry.admin('GET', '/deliveries?messageId=slow-body');
  assert.equal(stored.json.deliveries.length, 0, 'a body that never finished stored nothing');
  t.diagnostic(`after the abusers: slowest normal round trip ${await normalClient(ferry, 5, 'after')} ms`);
});

// -------------------------------------------------------------------------------------------
// Memory: thousands of connections that each send all but the last byte of a 512,000-byte body,
// and many complete large batches at once.

/** Attacking sockets per kind; spread over several loopback source addresses (below the per-address default). */
const attackersPerKind = 1_200;
const attackAddresses = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7'];
/** Connections opened at once per kind: all kinds' together must stay under the listen backlog (511), or they overflow into resets and SYN retries. */
const wave = 100;
/**
 * The stated ceiling of the server's resident memory under the attack: its own baseline (a
 * Node process running TypeScript through tsx), the 64 MiB body budget, and room for thousands
 * of sockets and their answers. Without the guards, this attack took a server from 159 MB to
 * 1.55 GB at 3,000 connections; reading the bodies of unmatched paths alone took one from 122
 * to 272 MiB with 150 connections.
 */
const rssCeilingBytes = 400 * 1024 * 1024;

function rssOf(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(kb, 'VmRSS is readable');
  return Number(kb[1]) * 1024;
}

/** A real `ferry serve` with one source, and the peak of its resident memory, sampled until `peak()` is read. */
async function servedFerry(t: TestContext) {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-memory-'));
  const config = join(dir, 'ferry.config.json');
  writeFileSync(config, JSON.stringify({ sources: [{ id: 'app', name: 'App', writeKey }], destinations: [] }));
  const proc = spawnFerry(['serve', '--config', config, '--data', join(dir, 'data'), '--port', '0', '--host', '127.0.0.1'], { FERRY_ADMIN_TOKEN: adminToken });
  t.after(async () => {
    proc.child.kill('SIGKILL');
    await within(10_000, 'the killed server to exit', proc.exited);
    rmSync(dir, { recursive: true, force: true });
  });
  const [, base] = await within(30_000, 'ferry start', proc.waitForOutput(/listening on (http:\/\/\S+)/));
  const pid = proc.child.pid!;
  const baseline = rssOf(pid);
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);
  t.after(() => clearInterval(sampler));
  return {
    base: base!,
    port: Number(new URL(base!).port),
    baseline,
    peak: () => {
      clearInterval(sampler);
      return Math.max(peak, rssOf(pid));
    },
  };
}

const adminToken = 'memory-admin-token-of-32-characters';

/** A batch of `count` track calls with `messageId`s under `tag`, each with a 900-byte property. */
function largeBatch(tag: string, count: number): string {
  const pad = 'p'.repeat(900);
  return JSON.stringify({
    batch: Array.from({ length: count }, (_, i) => ({
      type: 'track',
      userId: `user-${i % 50}`,
      event: 'Large',
      messageId: `${tag}-${i}`,
      properties: { pad },
    })),
  });
}

test(`${attackersPerKind * 4} connections holding most of a 500 KB body (unknown key, no key, a path no route matches, the admin API with a wrong token) keep the server's memory under ${rssCeilingBytes / 2 ** 20} MiB while a normal client's 100 KB batches are served`, async (t) => {
  const server = await servedFerry(t);
  const sockets = new Set<Socket>();
  t.after(() => {
    for (const s of sockets) s.destroy();
  });

  // One body shared by every socket: the sender holds 512 KB, not 512 KB per connection.
  const body = Buffer.alloc(511_999, 'z');
  const headOf = (path: string, authorization?: string) =>
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${authorization ? `Authorization: ${authorization}\r\n` : ''}Content-Length: 512000\r\n\r\n`;
  const heads = {
    'unknown key': headOf('/v1/batch', basicAuth('nobody-has-this-key')),
    'no key': headOf('/v1/batch'),
    '404 path': headOf('/v1/batch/'),
    'admin, wrong token': headOf('/admin/v1/sources', 'Bearer wrong-token-wrong-token-wrong-token'),
  };
  type Kind = keyof typeof heads;
  const kinds = Object.keys(heads) as Kind[];
  /** Per kind, the first line of each answer, once the server has closed the connection. */
  const closes = Object.fromEntries(kinds.map((k) => [k, [] as Promise<string>[]])) as Record<Kind, Promise<string>[]>;
  const attack = async (kind: Kind, i: number) => {
    const socket = connect({ port: server.port, host: '127.0.0.1', localAddress: attackAddresses[i % attackAddresses.length] });
    sockets.add(socket);
    socket.on('error', () => {}); // the server closes refused connections while they still write
    let received = '';
    socket.on('data', (c: Buffer) => (received ||= c.toString('latin1')));
    closes[kind].push(new Promise((resolve) => socket.on('close', () => resolve(received.split('\r\n')[0] || '(no answer)'))));
    await within(10_000, "an attacker's connection", once(socket, 'connect'));
    socket.write(heads[kind]);
    socket.write(body);
  };
  const attackStarted = Date.now();
  for (let i = 0; i < attackersPerKind; i += wave) {
    const n = Math.min(wave, attackersPerKind - i);
    const opened = Array.from({ length: n }, (_, j) => kinds.map((kind) => attack(kind, i + j))).flat();
    await within(30_000, 'a wave of attacking connections', Promise.all(opened));
  }
  const openingMs = Date.now() - attackStarted;
  t.diagnostic(
    `${attackersPerKind * kinds.length} attacking connections opened in ${openingMs} ms from ${attackAddresses.length} addresses; server RSS ${Math.round(server.baseline / 2 ** 20)} MiB before`,
  );

  // A normal client with batches of about 100 KB and a valid key, served while the admitted
  // keyless bodies hold their quarter of the budget.
  for (let i = 0; i < 10; i++) {
    const batch = largeBatch(`normal-${i}`, 100);
    assert.ok(batch.length > 95_000 && batch.length < 110_000, `a batch of ${batch.length} bytes`);
    const res = await fetch(`${server.base}/v1/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basicAuth(writeKey) },
      body: batch,
      signal: AbortSignal.timeout(30_000),
    });
    assert.equal(res.status, 200, `normal request ${i} during the attack: ${await res.text()}`);
  }

  // The server closes every attacking connection itself: strangers, unmatched paths and wrong
  // admin tokens at once on the head; keyless bodies past their quarter of the budget at once
  // with 503; the admitted ones when their body deadline (15 s) passes.
  const answers = {} as Record<Kind, Record<string, number>>;
  for (const kind of kinds) answers[kind] = count(await within(60_000, `every ${kind} connection closed`, Promise.all(closes[kind])));
  const peak = server.peak();
  t.diagnostic(
    Object.entries(answers)
      .map(([kind, got]) => `${kind}: ${JSON.stringify(got)}`)
      .join('; '),
  );
  t.diagnostic(`server RSS peak ${Math.round(peak / 2 ** 20)} MiB (ceiling ${rssCeilingBytes / 2 ** 20} MiB)`);
  assert.deepEqual(answers['unknown key'], { 'HTTP/1.1 401 Unauthorized': attackersPerKind }, 'every connection with an unknown key was answered 401');
  assert.deepEqual(answers['404 path'], { 'HTTP/1.1 404 Not Found': attackersPerKind }, 'every connection to a path no route matches was answered 404');
  assert.deepEqual(answers['admin, wrong token'], { 'HTTP/1.1 401 Unauthorized': attackersPerKind }, 'every admin request with a wrong token was answered 401');
  const keylessBodies = Math.floor((defaultHttpServerSettings.ingestBodyBudgetBytes * keylessShare) / 512_000);
  const noKey = answers['no key'];
  const busy = noKey['HTTP/1.1 503 Service Unavailable'] ?? 0;
  // An admitted body gives its share back when its deadline cuts it off: an attack that takes
  // longer than a deadline to open (a loaded machine) meets a freed quarter once per deadline.
  const shares = 1 + Math.floor(openingMs / defaultHttpServerSettings.bodyTimeoutMs);
  assert.ok(
    busy >= attackersPerKind - keylessBodies * shares,
    `at most ${keylessBodies} keyless bodies fit their quarter of the budget at once (${shares} time(s) over ${openingMs} ms of opening); ${busy} were refused with 503`,
  );
  assert.equal(busy + (noKey['HTTP/1.1 408 Request Timeout'] ?? 0), attackersPerKind, 'the admitted keyless bodies were cut off at their deadline');
  assert.ok(peak < rssCeilingBytes, `peak RSS ${Math.round(peak / 2 ** 20)} MiB is under the ceiling`);
});

/** Complete batches of about 500 KB sent at once, each with a valid key: as many as the default budget holds. */
const largeBatches = 128;
/**
 * The stated ceiling of the growth of the server's resident memory while it takes them, over
 * its baseline: the 64 MiB of bodies the budget admits, their chunks while they are read, and
 * at most 3 MiB of bodies (6 of these) processed at once, each taking up to about 20 times its size on the heap
 * while it is parsed and normalised (docs/operations.md), with the garbage collector's slack.
 * Processed all at once instead, the same batches grew a server by about 300 MiB.
 */
const largeBatchesRssGrowthCeilingBytes = 240 * 1024 * 1024;

test(`${largeBatches} complete batches of about 500 KB at once, each with a valid key, are all stored, and the server's memory grows by less than ${largeBatchesRssGrowthCeilingBytes / 2 ** 20} MiB`, async (t) => {
  const server = await servedFerry(t);
  const perBatch = 500;
  const sizes = new Set<number>();
  const answers = await within(
    120_000,
    `${largeBatches} large batches answered`,
    Promise.all(
      Array.from({ length: largeBatches }, async (_, i) => {
        const batch = largeBatch(`large-${i}`, perBatch);
        sizes.add(batch.length);
        const res = await fetch(`${server.base}/v1/batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: basicAuth(writeKey) },
          body: batch,
          signal: AbortSignal.timeout(110_000),
        });
        return `${res.status} ${await res.text()}`;
      }),
    ),
  );
  const peak = server.peak();
  const growth = peak - server.baseline;
  t.diagnostic(
    `batches of ${[...sizes].map((n) => Math.round(n / 1024)).join(', ')} KB; server RSS ${Math.round(server.baseline / 2 ** 20)} MiB before, peak ${Math.round(peak / 2 ** 20)} MiB: grew by ${Math.round(growth / 2 ** 20)} MiB (ceiling ${largeBatchesRssGrowthCeilingBytes / 2 ** 20} MiB)`,
  );
  assert.ok(
    [...sizes].every((n) => n > 450_000 && n <= 512_000),
    'each batch is about 500 KB, under the limit',
  );
  assert.deepEqual(count(answers), { '200 {"success":true}': largeBatches }, 'every batch was accepted');
  const stats = await fetch(`${server.base}/admin/v1/stats`, { headers: { authorization: `Bearer ${adminToken}` }, signal: AbortSignal.timeout(10_000) });
  assert.equal((await stats.json()).events, largeBatches * perBatch, 'every message was stored');
  assert.ok(growth < largeBatchesRssGrowthCeilingBytes, `RSS grew by ${Math.round(growth / 2 ** 20)} MiB, under the ceiling`);
});

function count(lines: string[]): Record<string, number> {
  return Object.fromEntries([...new Set(lines)].map((l) => [l, lines.filter((x) => x === l).length]));
}
