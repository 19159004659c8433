/**
 * The drain of the real `ferry serve` process on SIGTERM: readiness fails at once, new
 * requests (on a keep-alive socket opened before the signal, too) get 503 `shutting_down`
 * with `Connection: close`, an attempt in flight at a slow receiver completes and is
 * recorded, an ingestion request whose head came before the signal is answered 200 and
 * stored (nothing acknowledged is lost), then the process exits 0. The receiver holds the
 * attempt until the test has looked, so the listener is known to be open while it looks: no
 * timing is assumed.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { cleanups } from '../helpers/cleanups.js';
import { spawnFerry } from '../helpers/spawn-ferry.js';
import { within } from '../helpers/within.js';

const writeKey = 'drain-test-write-key';

/** A raw HTTP/1.1 keep-alive connection: each request's answer, read up to its Content-Length. */
function keepAliveSocket(port: number): { socket: Socket; request(text: string): Promise<{ head: string; body: string }>; closed: Promise<unknown> } {
  const socket = connect(port, '127.0.0.1');
  let buffer = '';
  let waiting: (() => void) | undefined;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    waiting?.();
  });
  const closed = once(socket, 'close');
  return {
    socket,
    closed,
    request(text) {
      socket.write(text);
      return new Promise((resolve, reject) => {
        const check = () => {
          const end = buffer.indexOf('\r\n\r\n');
          if (end < 0) return;
          const head = buffer.slice(0, end);
          const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
          if (buffer.length < end + 4 + length) return;
          const body = buffer.slice(end + 4, end + 4 + length);
          buffer = buffer.slice(end + 4 + length);
          waiting = undefined;
          resolve({ head, body });
        };
        waiting = check;
        socket.once('close', () => reject(new Error(`socket closed before an answer; got ${JSON.stringify(buffer)}`)));
        check();
      });
    },
  };
}

test('SIGTERM drains: readiness 503 at once, new requests 503 with Connection: close, requests and attempts in flight finish and are recorded, exit 0', async (t) => {
  const after = cleanups(t);
  const dir = mkdtempSync(join(tmpdir(), 'ferry-drain-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  // A receiver that holds every request until released.
  const held: ServerResponse[] = [];
  let arrived: () => void = () => {};
  const firstArrival = new Promise<void>((resolve) => (arrived = resolve));
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      held.push(res);
      arrived();
    });
  });
  receiver.listen(0, '127.0.0.1');
  await within(10_000, 'the receiver to listen', once(receiver, 'listening'));
  after(() => new Promise<void>((resolve) => (receiver.closeAllConnections(), receiver.close(() => resolve()))));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const config = join(dir, 'ferry.config.json');
  writeFileSync(
    config,
    JSON.stringify({
      sources: [{ id: 'app', writeKey }],
      destinations: [{ id: 'slow', type: 'Webhooks', sources: ['app'], settings: { webhooks: [{ url: receiverUrl }] } }],
      // A generous timeout, so the attempt held by the test never times out on a busy machine.
      delivery: { timeoutMs: 30_000, leaseMs: 61_000 },
    }),
  );
  const dataDir = join(dir, 'data');
  const ferry = spawnFerry(['serve', '--config', config, '--data', dataDir, '--port', '0', '--host', '127.0.0.1', '--drain-ms', '100'], {
    FERRY_ADMIN_TOKEN: 'drain-test-admin-token-32-characters',
    FERRY_ALLOW_PRIVATE_NETWORKS: '1',
  });
  after(() => void ferry.child.kill('SIGKILL'));
  const [, base] = await ferry.waitForOutput(/listening on (http:\/\/\S+)/);
  const port = Number(new URL(base!).port);

  assert.equal((await fetch(`${base}/health/ready`)).status, 200);
  const early = keepAliveSocket(port);
  after(() => void early.socket.destroy());
  const first = await early.request('GET /health HTTP/1.1\r\nHost: ferry\r\n\r\n');
  assert.match(first.head, /^HTTP\/1\.1 200/);
  assert.doesNotMatch(first.head, /connection: close/i);

  const auth = 'Basic ' + Buffer.from(`${writeKey}:`).toString('base64');
  const track = await fetch(`${base}/v1/track`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: auth },
    body: JSON.stringify({ userId: 'u1', event: 'Held', messageId: 'held-1' }),
  });
  assert.equal(track.status, 200);
  await within(10_000, 'the held attempt to reach the receiver', firstArrival);

  // A request in flight as the signal comes: its head is in (the server's `100 Continue` says
  // so, sent as the request is handed to the routes), the rest of its body not yet.
  const inFlightBody = JSON.stringify({ userId: 'u3', event: 'In flight', messageId: 'inflight-1' });
  const inFlight = keepAliveSocket(port);
  after(() => void inFlight.socket.destroy());
  const continued = inFlight.request(
    `POST /v1/track HTTP/1.1\r\nHost: ferry\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${Buffer.byteLength(inFlightBody)}\r\n\r\n`,
  );
  assert.match((await within(10_000, 'the 100 Continue', continued)).head, /^HTTP\/1\.1 100 Continue/);

  ferry.child.kill('SIGTERM');
  await ferry.waitForOutput(/SIGTERM: draining/);

  const body = JSON.stringify({ userId: 'u2', event: 'Late' });
  const late = await early.request(
    `POST /v1/track HTTP/1.1\r\nHost: ferry\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  assert.match(late.head, /^HTTP\/1\.1 503/);
  assert.match(late.head, /\r\nconnection: close/i);
  assert.equal(JSON.parse(late.body).errors[0].code, 'shutting_down');
  await within(10_000, 'the keep-alive socket to be closed', early.closed);

  const ready = await fetch(`${base}/health/ready`);
  assert.equal(ready.status, 503);
  assert.equal(((await ready.json()) as any).errors[0].code, 'shutting_down');
  assert.equal((await fetch(`${base}/health`)).status, 200, 'liveness holds during the drain');
  const admin = await fetch(`${base}/admin/v1/stats`, { headers: { authorization: 'Bearer drain-test-admin-token-32-characters' } });
  assert.equal(admin.status, 503, 'the admin API is refused too');

  // The request in flight is answered as usual, and what it acknowledged is stored.
  const answered = await within(10_000, 'the answer to the request in flight', inFlight.request(inFlightBody));
  assert.match(answered.head, /^HTTP\/1\.1 200/);
  assert.deepEqual(JSON.parse(answered.body), { success: true });

  // The attempt in flight finishes; then the process stops by itself.
  for (const res of held) res.writeHead(200).end('ok');
  assert.deepEqual(await within(15_000, 'ferry serve to exit after the drain', ferry.exited), { code: 0, signal: null });

  const store = new SqliteStore({ path: join(dataDir, 'ferry.db') });
  after(() => store.close());
  const deliveries = await store.listDeliveries({ limit: 10 });
  assert.deepEqual(
    deliveries.map((d) => [d.messageId, d.status, d.attemptCount]).sort(),
    [
      ['held-1', 'succeeded', 1],
      ['inflight-1', 'pending', 0],
    ],
    'the held attempt was recorded as a success, the acknowledged in-flight event waits for the next start, and the late event was not stored',
  );
});
