/**
 * What ingestion does before it reads a body, and with clients that leave mid-body: a
 * stranger's key is refused on the head alone, the bodies held at once stay within the
 * budget, each address has a connection cap, and a hang-up is logged as the client's doing.
 * Real Ferry servers on loopback, raw sockets for the clients that misbehave.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { describe, test, type TestContext } from 'node:test';
import pino from 'pino';
import { keylessShare } from '../../src/ingest/body-budget.js';
import { addressGroup } from '../../src/http/connections-per-address.js';
import { bodyReservationBytes } from '../../src/ingest/ingest-admission.js';
import { minBodyBudgetBytes } from '../../src/cli/settings.js';
import type { FerryOptions } from '../../src/app.js';
import { startFerry, testConfig, webhooksDestination, writeKey, type TestFerry } from '../helpers/ferry.js';
import { basicAuth, within } from '../faults/support.js';
import { until } from '../helpers/until.js';

const sockets = new Set<Socket>();

/** A Ferry of the test's own; when the test ends, the test's raw sockets are closed first, then the server. */
async function ferryFor(t: TestContext, options: Partial<FerryOptions> = {}): Promise<TestFerry> {
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]), { deliver: false, ...options });
  t.after(async () => {
    for (const s of sockets) s.destroy();
    await ferry.stop();
  });
  return ferry;
}

/** A raw connection to `ferry`, from `localAddress` (any 127.x address reaches the server). */
async function openSocket(ferry: TestFerry, localAddress = '127.0.0.1'): Promise<Socket> {
  const socket = connect({ port: Number(new URL(ferry.url).port), host: '127.0.0.1', localAddress });
  sockets.add(socket);
  socket.on('error', () => {}); // a reset by the server is an outcome these tests judge by other means
  socket.on('close', () => sockets.delete(socket));
  await within(10_000, 'a connection to the server', once(socket, 'connect'));
  return socket;
}

/** Everything the server sends on `socket` until it closes it (bounded). */
function answerOf(socket: Socket, what: string, ms = 5_000): Promise<string> {
  let received = '';
  socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
  return within(ms, what, new Promise<string>((resolve) => socket.on('close', () => resolve(received))));
}

/** The head of a POST /v1/batch that declares `length` body bytes. */
function head(length: number, headers: Record<string, string> = {}): string {
  const lines = Object.entries({ 'Content-Type': 'application/json', ...headers, 'Content-Length': String(length) }).map(([k, v]) => `${k}: ${v}\r\n`);
  return `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines.join('')}\r\n`;
}

/** A batch of one track call, with the write key in the body, padded to exactly `length` bytes. */
function paddedBatch(messageId: string, length: number): string {
  const prefix = `{"writeKey":"${writeKey}","batch":[{"type":"track","userId":"u","event":"E","messageId":"${messageId}"}],"pad":"`;
  return prefix + 'z'.repeat(length - prefix.length - 2) + '"}';
}

describe('before the body is read', () => {
  test('an unknown Basic key is answered 401 on the head alone, and the connection closed with the body unread', async (t) => {
    const ferry = await ferryFor(t);
    const socket = await openSocket(ferry);
    const answer = answerOf(socket, 'the 401');
    // 512,000 bytes declared, none sent: only an answer that does not wait for the body can come.
    socket.write(head(512_000, { Authorization: basicAuth('nobody-has-this-key') }));
    const text = await answer;
    assert.match(text, /^HTTP\/1\.1 401 /);
    assert.match(text, /\r\nconnection: close\r\n/i);
    assert.match(text, /"code":"unauthorized"/);
  });

  test('a known Basic key, or none (the key may be in the body), has its body read', async (t) => {
    const ferry = await ferryFor(t);
    const withKey = await ferry.send('/v1/batch', { batch: [{ type: 'track', userId: 'u', event: 'E' }] });
    assert.equal(withKey.status, 200);
    const inBody = await ferry.send('/v1/batch', { writeKey, batch: [{ type: 'track', userId: 'u', event: 'E' }] }, { writeKey: null });
    assert.equal(inBody.status, 200);
  });

  test('the bodies held at once stay within the budget: past it, 503 server_busy with Retry-After; room comes back when a request ends', async (t) => {
    const ferry = await ferryFor(t, { http: { ingestBodyBudgetBytes: 1_048_576 } });
    const budget = ferry.ferry.ingestBodyBudget;
    // Two bodies of 512,000 bytes with a valid key, all but the last byte sent, reserve 1,024,000 of the 1,048,576.
    const held = await Promise.all([openSocket(ferry), openSocket(ferry)]);
    const bodies = held.map((_, i) => paddedBatch(`held-${i}`, 512_000));
    const heldAnswers = held.map((s, i) => answerOf(s, `held request ${i}`, 10_000));
    held.forEach((s, i) => s.write(head(512_000, { Authorization: basicAuth(writeKey) }) + bodies[i]!.slice(0, -1)));
    await until(() => budget.heldBytes === 1_024_000, 'both held requests admitted');
    // A third big one is refused.
    const third = await openSocket(ferry);
    const thirdAnswer = answerOf(third, 'the 503');
    third.write(head(512_000, { Authorization: basicAuth(writeKey) }));
    const refused = await thirdAnswer;
    assert.match(refused, /^HTTP\/1\.1 503 /);
    assert.match(refused, /\r\nretry-after: 1\r\n/i);
    assert.match(refused, /\r\nconnection: close\r\n/i);
    assert.match(refused, /"code":"server_busy"/);
    // A small request still fits beside the two.
    assert.equal((await ferry.send('/v1/batch', { batch: [{ type: 'track', userId: 'u', event: 'E' }] })).status, 200);

    // One held request finishes: its reservation is given back, and a big request fits again.
    held[0]!.end(bodies[0]!.slice(-1));
    assert.match(await heldAnswers[0]!, /^HTTP\/1\.1 200 /);
    await until(() => budget.heldBytes === 512_000, 'the finished request released its reservation');
    const next = await ferry.send('/v1/batch', undefined, { raw: paddedBatch('after', 512_000) });
    assert.equal(next.status, 200);
    held[1]!.destroy();
    await heldAnswers[1];
    await until(() => budget.heldBytes === 0, 'the abandoned request released its reservation');
    assert.equal((await ferry.admin('GET', '/deliveries?messageId=held-1')).json.deliveries.length, 0, 'the abandoned body stored nothing');
  });

  test('requests without a key header hold at most a quarter of the budget: a request with a valid key still finds room', async (t) => {
    const ferry = await ferryFor(t, { http: { ingestBodyBudgetBytes: 4 * 1_048_576 } });
    const budget = ferry.ferry.ingestBodyBudget;
    // Two keyless bodies of 512,000 bytes hold 1,024,000 of the keyless quarter, 1,048,576.
    const held = await Promise.all([openSocket(ferry), openSocket(ferry)]);
    const heldAnswers = held.map((s, i) => answerOf(s, `keyless request ${i}`, 10_000));
    held.forEach((s, i) => s.write(head(512_000) + paddedBatch(`keyless-${i}`, 512_000).slice(0, -1)));
    await until(() => budget.keylessHeldBytes === 1_024_000, 'both keyless requests admitted');
    const third = await openSocket(ferry);
    const thirdAnswer = answerOf(third, 'the keyless 503');
    third.write(head(512_000));
    const refused = await thirdAnswer;
    assert.match(refused, /^HTTP\/1\.1 503 /);
    assert.match(refused, /"code":"server_busy"/);
    // The budget as a whole has room: a big request with its key in the header is served.
    const keyed = await ferry.send('/v1/batch', undefined, { raw: paddedBatch('keyed', 512_000) });
    assert.equal(keyed.status, 200);
    for (const s of held) s.destroy();
    await Promise.all(heldAnswers);
  });

  test('a request to no route is answered 404 on its head, and the connection closed with the body unread', async (t) => {
    const ferry = await ferryFor(t);
    for (const path of ['/v1/batch/', '/v1/Batch', '/anything', '/administrator']) {
      const socket = await openSocket(ferry);
      const answer = answerOf(socket, `the 404 of ${path}`);
      // 512,000 bytes declared, none sent: only an answer that does not wait for the body can come.
      socket.write(head(512_000).replace('/v1/batch ', `${path} `));
      const text = await answer;
      assert.match(text, /^HTTP\/1\.1 404 /, path);
      assert.match(text, /\r\nconnection: close\r\n/i, path);
      assert.match(text, /"code":"not_found"/, path);
    }
  });

  test('an admin request with a wrong token, to a known path or not, is answered 401 on its head, and the connection closed', async (t) => {
    const ferry = await ferryFor(t);
    for (const path of ['/admin/v1/sources', '/admin/v1/no-such-thing']) {
      const socket = await openSocket(ferry);
      const answer = answerOf(socket, `the 401 of ${path}`);
      socket.write(head(512_000, { Authorization: 'Bearer wrong-token' }).replace('/v1/batch ', `${path} `));
      const text = await answer;
      assert.match(text, /^HTTP\/1\.1 401 /, path);
      assert.match(text, /\r\nconnection: close\r\n/i, path);
      assert.match(text, /"code":"admin_unauthorized"/, path);
    }
  });

  test('a reservation is the declared length capped at the raw limit, plus the decompressed copy of a gzip body', () => {
    assert.equal(bodyReservationBytes({ 'content-length': '1000' }), 1000);
    assert.equal(bodyReservationBytes({ 'content-length': '1000', 'content-encoding': ' GZIP ' }), 1000 + 500 * 1024);
    const rawLimit = 500 * 1024 + 1024;
    assert.equal(bodyReservationBytes({ 'content-length': '99999999' }), rawLimit);
    assert.equal(bodyReservationBytes({ 'transfer-encoding': 'chunked' }), rawLimit, 'no declared length: the most a body may be');
    assert.ok(
      bodyReservationBytes({ 'content-encoding': 'x-gzip' }) <= minBodyBudgetBytes * keylessShare,
      "the smallest budget's keyless quarter holds the largest request",
    );
  });
});

describe('attacks on the body framing', () => {
  test('a declared length over the limit is answered 413 before any of the body is sent, and the connection closed', async (t) => {
    const ferry = await ferryFor(t);
    const socket = await openSocket(ferry);
    const answer = answerOf(socket, 'the 413');
    socket.write(head(100 * 1024 * 1024, { Authorization: basicAuth(writeKey) }));
    const text = await answer;
    assert.match(text, /^HTTP\/1\.1 413 /);
    assert.match(text, /"code":"payload_too_large"/);
  });

  test('a chunked body is cut off with 413 once it passes the limit, without waiting for its end', async (t) => {
    const ferry = await ferryFor(t);
    const socket = await openSocket(ferry);
    const answer = answerOf(socket, 'the 413');
    socket.write(`POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basicAuth(writeKey)}\r\nTransfer-Encoding: chunked\r\n\r\n`);
    // 1 MiB in 64 KiB chunks, and never the closing zero-length chunk.
    const chunk = 'a'.repeat(64 * 1024);
    for (let i = 0; i < 16; i++) socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    const text = await answer;
    assert.match(text, /^HTTP\/1\.1 413 /);
    assert.match(text, /"code":"payload_too_large"/);
  });

  test('a request with both Content-Length and Transfer-Encoding (request smuggling) is refused with 400 and its connection closed', async (t) => {
    const ferry = await ferryFor(t);
    const socket = await openSocket(ferry);
    const answer = answerOf(socket, 'the 400');
    const smuggled = JSON.stringify({ batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'smuggled' }] });
    socket.write(
      `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basicAuth(writeKey)}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n` +
        `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basicAuth(writeKey)}\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
    );
    assert.match(await answer, /^HTTP\/1\.1 400 /);
    assert.equal((await ferry.admin('GET', '/deliveries?messageId=smuggled')).json.deliveries.length, 0, 'the smuggled request was not served');
    assert.equal((await ferry.admin('GET', '/stats')).json.events, 0);
  });
});

describe('connections per address', () => {
  test('addresses are counted in groups: IPv4 alone (IPv4-mapped IPv6 as IPv4), IPv6 by its /64', () => {
    const table: [string, string][] = [
      ['203.0.113.7', '203.0.113.7'],
      ['::ffff:203.0.113.7', '203.0.113.7'],
      ['::FFFF:203.0.113.7', '203.0.113.7'],
      ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
      ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
      ['2001:0db8:0001:0002:0000:0000:0000:ffff', '2001:db8:1:2::/64'],
      ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
      ['2001:db8::1', '2001:db8::/64'],
      ['::1', '::/64'],
      ['fe80::1%eth0', 'fe80::/64'],
      ['64:ff9b::198.51.100.1', '64:ff9b::/64'],
      ['', ''],
      ['not an address', 'not an address'],
    ];
    for (const [address, group] of table) assert.equal(addressGroup(address), group, address);
  });

  test('connections over the per-address cap are closed at once; other addresses and freed slots are served', async (t) => {
    const ferry = await ferryFor(t, { http: { maxConnectionsPerAddress: 3 } });
    const port = Number(new URL(ferry.url).port);
    const idle = await Promise.all([1, 2, 3].map(() => openSocket(ferry)));
    const over = await openSocket(ferry);
    const overAnswer = await answerOf(over, 'the over-cap connection closed');
    assert.equal(overAnswer, '', 'closed without a byte read or answered');

    /** A health check from one source address, on a fresh connection. */
    const healthFrom = (localAddress: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path: '/health', localAddress, agent: false }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    assert.equal(await healthFrom('127.0.0.2'), 200, 'another address is not affected');

    // The server counts a slot free once it has seen the close; a bounded retry waits for that.
    idle[0]!.destroy();
    const deadline = Date.now() + 5_000;
    let status = 0;
    while (status !== 200 && Date.now() < deadline) status = await healthFrom('127.0.0.1').catch(() => 0);
    assert.equal(status, 200, 'a freed slot serves the same address again');
  });
});

describe('a client that hangs up mid-body', () => {
  test('is logged as a client abort, never as the store being unavailable', async (t) => {
    const lines: { level: number; msg: string }[] = [];
    let onLine = () => {};
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
        onLine();
        done();
      },
    });
    const ferry = await ferryFor(t, { logger: pino({ level: 'debug' }, sink) });
    const logged = (pattern: RegExp) => lines.find((l) => pattern.test(l.msg));

    const socket = await openSocket(ferry);
    const body = paddedBatch('hung-up', 20_000);
    // Half the body, then the client ends its side and closes: every byte it sent reaches the
    // server before the end does, so the server is mid-body when the client goes.
    socket.write(head(body.length, { Authorization: basicAuth(writeKey) }) + body.slice(0, body.length / 2));
    socket.destroySoon();

    const abortLine = /client closed the connection/;
    const abort = await within(
      5_000,
      'a client-abort line',
      new Promise<{ level: number; msg: string }>((resolve) => {
        onLine = () => {
          const line = logged(abortLine);
          if (line) resolve(line);
        };
        onLine();
      }),
    ).catch(() => undefined);
    assert.ok(abort, `a client-abort line was logged; got ${JSON.stringify(lines.map((l) => l.msg))}`);
    assert.equal(abort.level, 30, 'at info');
    assert.equal(logged(/store unavailable|503/), undefined, 'no outage was claimed');
    assert.ok(
      lines.every((l) => l.level < 50),
      'nothing at error',
    );
    assert.equal((await ferry.admin('GET', '/deliveries?messageId=hung-up')).json.deliveries.length, 0);
  });
});
