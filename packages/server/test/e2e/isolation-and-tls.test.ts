import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createHttpSender } from '../../src/destinations/http/http-sender.js';
import type { WebhookSender } from '../../src/destinations/http/sender.js';
import { systemClock } from '../../src/util/clock.js';
import { startFerry, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';
import { within } from '../helpers/within.js';

const fixture = (name: string) => readFileSync(fileURLToPath(new URL(`../fixtures/tls/${name}`, import.meta.url)));

async function httpsReceiver(cert: string, key: string) {
  let requests = 0;
  const server = createServer({ cert: fixture(cert), key: fixture(key) }, (_req, res) => {
    requests++;
    res.writeHead(200).end();
  });
  server.listen(0, '127.0.0.1');
  await within(10_000, 'the TLS receiver to listen', once(server, 'listening'));
  return {
    url: `https://localhost:${(server.address() as AddressInfo).port}/hook`,
    get requests() {
      return requests;
    },
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

describe('TLS and network policy at the destination', () => {
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of closers) await c();
  });

  test('a self-signed certificate raises an error and no request is sent', async () => {
    const receiver = await httpsReceiver('self-signed.crt', 'self-signed.key');
    closers.push(receiver.close);
    const ferry = await startFerry(testConfig([webhooksDestination('tls', [receiver.url])]), { deliver: false });
    closers.push(ferry.stop);
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    await ferry.idle();
    assert.equal(receiver.requests, 0);
    const [dead] = (await ferry.admin('GET', '/dead-letters')).json.deliveries;
    assert.equal(dead.deadReason, 'non_retryable_response');
    const detail = await ferry.admin('GET', `/deliveries/${dead.id}`);
    assert.equal(detail.json.attempts[0].errorClass, 'tls');
  });

  test('a certificate from a CA the process trusts works', async () => {
    const receiver = await httpsReceiver('localhost.crt', 'localhost.key');
    closers.push(receiver.close);
    const ferry = await startFerry(testConfig([webhooksDestination('tls', [receiver.url])]), { deliver: false, ca: fixture('ca.crt') });
    closers.push(ferry.stop);
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    await ferry.idle();
    assert.equal(receiver.requests, 1);
    assert.equal((await ferry.admin('GET', '/deliveries?status=succeeded')).json.deliveries.length, 1);
  });

  test('the SSRF guard refuses loopback by default and no request reaches it', async () => {
    const receiver = await startReceiver();
    closers.push(receiver.close);
    const config = testConfig([webhooksDestination('ssrf', [receiver.url, receiver.url.replace('127.0.0.1', 'localhost') + '/named'])]);
    config.network.allowPrivateNetworks = false;
    const ferry = await startFerry(config, { deliver: false });
    closers.push(ferry.stop);
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    await ferry.idle();
    assert.equal(receiver.requests.length, 0);
    const [dead] = (await ferry.admin('GET', '/dead-letters')).json.deliveries;
    const detail = await ferry.admin('GET', `/deliveries/${dead.id}`);
    assert.deepEqual(
      detail.json.attempts.map((a: any) => a.errorClass),
      ['ssrf', 'ssrf'],
    );
  });

  test('an endpoint that never answers does not hold up a healthy destination', async () => {
    const slow = await startReceiver('hang');
    const fast = await startReceiver();
    closers.push(slow.close, fast.close);
    const perDestination = 4;
    const config = testConfig([webhooksDestination('slow', [slow.url]), webhooksDestination('fast', [fast.url])], {
      delivery: { timeoutMs: 30_000, leaseMs: 61_000, concurrency: 16, perDestinationConcurrency: perDestination, claimBatchSize: 4 },
    });
    // The real sender, with a count of the sends the worker starts per URL: the boundary is
    // observed, not replaced.
    const real = createHttpSender({ allowPrivateNetworks: true, allowedNetworks: [], connectionsPerOrigin: perDestination, clock: systemClock });
    const started = new Map<string, number>();
    const sender: WebhookSender = {
      send: (request) => {
        started.set(request.url, (started.get(request.url) ?? 0) + 1);
        return real.send(request);
      },
      close: () => real.close(),
    };
    // Claim rounds by hand: after the last one, no send can start.
    const ferry = await startFerry(config, { deliver: false, sender });
    closers.push(ferry.stop);
    const n = 60;
    const res = await ferry.send('/v1/batch', { batch: Array.from({ length: n }, (_, i) => ({ type: 'track', userId: `u${i}`, event: 'E' })) });
    assert.equal(res.status, 200);
    const { worker } = ferry.ferry;
    const deadline = Date.now() + 10_000;
    while (fast.requests.length < n) {
      assert.ok(Date.now() < deadline, `the healthy destination received ${fast.requests.length} of ${n} within 10 s`);
      await worker.tick();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // A few more rounds, with the hanging endpoint's slots all held: none may start a send to it.
    for (let i = 0; i < 3; i++) await worker.tick();
    assert.equal(fast.requests.length, n, 'the healthy destination received everything');
    // The hanging endpoint was tried with as many requests as it has slots and no more: each
    // holds its slot for the 30 s time limit, far longer than this test.
    assert.equal(started.get(slow.url), perDestination, 'sends started to the hanging endpoint');
    await slow.waitFor(perDestination);
    assert.equal(slow.requests.length, perDestination);
  });
});
