import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { createHttpSender } from '../../src/destinations/http/http-sender.js';
import type { AttemptRecord } from '../../src/model/attempt.js';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { testConfig, webhooksDestination } from '../helpers/ferry.js';
import { startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { stopPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';

after(() => stopPostgres());

const leaseMs = 60_000;

/**
 * A receiver on loopback that holds every request until the test opens it, then answers 500:
 * node-a's attempt is under way for as long as the test needs to let its lease go to another node.
 */
async function heldReceiver(onCleanup: (fn: () => Promise<void>) => void) {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      void opened.then(() => res.writeHead(500).end('busy'));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(async () => {
    open();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received: () => received, open };
}

const attemptOfNodeB: AttemptRecord = {
  url: 'http://127.0.0.1/node-b',
  startedAtMs: 0,
  latencyMs: 3,
  statusCode: 200,
  errorClass: null,
  errorMessage: null,
  responseBody: null,
  trigger: 'scheduled',
};

for (const kind of storeKinds) {
  describe(`a lease lost to another node (${kind})`, () => {
    test("the worker neither records its attempt's outcome over the other node's nor sends the job it held ready", async (t) => {
      const add = cleanups(t);
      const receiver = await heldReceiver(add);
      const clock = new ManualClock();
      const t0 = clock.now();
      // One slot and a 60 s lease: one job is sent, the other waits ready (5 per slot may, at an unknown pace).
      const config = testConfig([webhooksDestination('hooks', [receiver.url], { circuitBreaker: { enabled: false } })], {
        delivery: { perDestinationConcurrency: 1, leaseMs },
      });
      // The exchange's time limit on Node's timers: moving the clock past the lease must not end
      // the attempt, which ends when the test opens the receiver.
      const sender = createHttpSender({ allowPrivateNetworks: true, allowedNetworks: [], clock });
      add(() => sender.close());
      // deliver: false, so node-a never renews on its own: it stalls, as a node whose leases run out does.
      const { server } = await startFerryOn(kind, config, { clock, sender, deliver: false, nodeId: 'node-a' }, add);
      const { worker, store } = server.ferry;
      const lost: number[] = [];
      const recorded: string[] = [];
      worker.on('delivery:lease-lost', ({ id }) => lost.push(id));
      worker.on('delivery:retrying', ({ id }) => recorded.push(`retrying ${id}`));
      worker.on('delivery:succeeded', ({ id }) => recorded.push(`succeeded ${id}`));
      const batch = ['m0', 'm1'].map((messageId) => ({ type: 'track', event: 'E', userId: 'u1', messageId }));
      assert.equal((await server.send('/v1/batch', { batch })).status, 200);

      assert.equal(await worker.tick(), 2, 'node-a leases both');
      await until(() => receiver.received() === 1, "node-a's attempt of the first job to reach the receiver");
      const [sending, ready] = (await store.listDeliveries({ destinationId: 'hooks', limit: 10 })).map((d) => d.id).sort((a, b) => a - b);

      // node-a's leases run out mid-attempt; node-b takes both jobs and records the first as delivered.
      clock.set(t0 + leaseMs + 1);
      const taken = await store.claim({ destinationId: 'hooks', owner: 'node-b', nowMs: clock.now(), leaseMs, limit: 10 });
      assert.deepEqual(
        taken.map((j) => j.id).sort((a, b) => a - b),
        [sending, ready],
      );
      const doneByB = (id: number) =>
        store.complete({
          id,
          owner: 'node-b',
          createdAtMs: taken.find((j) => j.id === id)!.createdAtMs,
          nowMs: clock.now(),
          firstAttemptAtMs: clock.now(),
          attempts: [{ ...attemptOfNodeB, startedAtMs: clock.now() }],
          outcome: { status: 'succeeded' },
        });
      assert.equal(await doneByB(sending!), true);

      // node-a's next renewal finds both leases gone: the ready job is dropped, never started.
      await worker.leases.renew();
      assert.deepEqual(lost, [ready]);
      // Its attempt of the first ends (a 500, which it would record as a retry): the record is refused.
      receiver.open();
      await server.settled();
      assert.deepEqual(lost, [ready, sending]);
      assert.deepEqual(recorded, [], 'no outcome reported as recorded');
      assert.equal(receiver.received(), 1, 'the ready job was not sent by node-a');

      const first = (await store.getDelivery(sending!))!.delivery;
      assert.equal(first.status, 'succeeded', "node-b's outcome stands");
      assert.equal(first.attemptCount, 1, "only node-b's attempt counts");
      assert.equal(first.completedAt, new Date(t0 + leaseMs + 1).toISOString());
      assert.equal(await doneByB(ready!), true, 'node-b still holds the job node-a had ready');
      assert.equal((await store.getDelivery(ready!))!.delivery.status, 'succeeded');
    });
  });
}
