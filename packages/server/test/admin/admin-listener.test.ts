import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { createFerry, type FerryOptions } from '../../src/app.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, testConfig, webhooksDestination, writeKey } from '../helpers/ferry.js';
import { adminCall } from '../helpers/ferry-on-store.js';
import { spawnFerry } from '../helpers/spawn-ferry.js';
import { within } from '../helpers/within.js';

const config = () => testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]);

async function ferryWith(t: { after: (fn: () => Promise<void> | void) => void }, options: Partial<FerryOptions>) {
  const onCleanup = cleanups(t);
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-test-'));
  onCleanup(() => rmSync(dataDir, { recursive: true, force: true }));
  const ferry = await createFerry({ config: config(), dataDir, adminToken, logger: pino({ level: 'silent' }), deliver: false, ...options });
  let stopped = false;
  onCleanup(async () => {
    if (!stopped) await ferry.stop();
  });
  return { ferry, stop: () => ((stopped = true), ferry.stop()) };
}

/** A request head with a body announced and never sent: answered only if the server answers on the head. */
async function headOnly(base: string, path: string): Promise<string> {
  const { port } = new URL(base);
  const socket = connect(Number(port), '127.0.0.1');
  socket.on('error', () => {});
  try {
    await once(socket, 'connect');
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${adminToken}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
    );
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    await within(10_000, 'an answer on the head', once(socket, 'close'));
    return answer;
  } finally {
    socket.destroy();
  }
}

test('with an admin listener, /admin answers only there; ingestion stays on the public one; health answers on both', async (t) => {
  const { ferry, stop } = await ferryWith(t, { admin: { port: 0 } });
  const { url, adminUrl } = await ferry.start({ port: 0 });
  assert.notEqual(url, adminUrl);
  assert.notEqual(ferry.adminApp, ferry.app);

  assert.equal((await adminCall(adminUrl, adminToken, 'GET', '/stats')).status, 200);
  assert.equal((await adminCall(adminUrl, adminToken, 'PATCH', '/destinations/hooks', { enabled: false })).status, 200);
  for (const token of [adminToken, undefined]) {
    const res = await adminCall(url, token, 'GET', '/stats');
    assert.equal(res.status, 404, 'on the public listener /admin is an unknown path, token or not');
    assert.equal(res.json.errors[0].code, 'not_found');
  }
  assert.match(await headOnly(url, '/admin/v1/sources'), /^HTTP\/1\.1 404 [\s\S]*connection: close/i, 'refused on its head, the body never read');

  const track = (base: string) =>
    fetch(`${base}/v1/track`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Basic ' + Buffer.from(`${writeKey}:`).toString('base64') },
      body: JSON.stringify({ userId: 'u1', event: 'E' }),
    });
  assert.equal((await track(url)).status, 200);
  assert.equal((await track(adminUrl)).status, 404, 'no ingestion on the admin listener');
  assert.equal((await adminCall(adminUrl, adminToken, 'GET', '/stats')).json.events, 1);

  for (const base of [url, adminUrl]) {
    assert.equal((await fetch(`${base}/health`)).status, 200, `${base}/health`);
    assert.equal((await fetch(`${base}/health/ready`)).status, 200, `${base}/health/ready`);
  }

  await stop();
  for (const base of [url, adminUrl]) await assert.rejects(fetch(`${base}/health`), `${base} is closed after the stop`);
});

test('without an admin listener, one listener serves everything and start(port, host) answers its URL', async (t) => {
  const { ferry } = await ferryWith(t, {});
  const url = await ferry.start(0, '127.0.0.1');
  assert.equal(typeof url, 'string');
  assert.equal(ferry.adminApp, ferry.app);
  assert.equal((await adminCall(url, adminToken, 'GET', '/stats')).status, 200);
});

test('an admin port in use stops the start, leaving the public port closed', async (t) => {
  const busy = createServer();
  busy.listen(0, '127.0.0.1');
  await once(busy, 'listening');
  t.after(() => new Promise<void>((resolve) => busy.close(() => resolve())));
  const { ferry } = await ferryWith(t, { admin: { port: (busy.address() as { port: number }).port } });
  await assert.rejects(ferry.start({ port: 0 }), /EADDRINUSE/);
  assert.equal(ferry.app.server.listening, false);
});

test('ferry serve --admin-port prints the admin URL and serves /admin only there', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-admin-port-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const serve = spawnFerry(['serve', '--data', dir, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0'], {
    FERRY_CONFIG: '',
    FERRY_ADMIN_TOKEN: adminToken,
  });
  t.after(() => void serve.child.kill('SIGKILL'));
  const [, base] = await serve.waitForOutput(/listening on (http:\/\/\S+)/);
  const [, adminBase] = await serve.waitForOutput(/admin API: (http:\/\/\S+)\/admin\/v1 \(only on this listener\)/);
  assert.notEqual(adminBase, base);
  assert.equal((await adminCall(adminBase!, adminToken, 'GET', '/stats')).status, 200);
  assert.equal((await adminCall(base!, adminToken, 'GET', '/stats')).status, 404);
  serve.child.kill('SIGTERM');
  assert.equal((await serve.waitForExit()).code, 0);
});
