import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import type { DestinationType } from '../../src/destinations/destination-type.js';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { startFerry, testConfig } from '../helpers/ferry.js';

const leaseMs = 12_000;

/** A destination type whose first attempt throws (a bug in a type), and whose later ones succeed. */
function throwingOnceType(): DestinationType<Record<string, never>> & { calls: number } {
  return {
    type: 'ThrowsOnce',
    calls: 0,
    settingsSchema: z.strictObject({}),
    renderMessage: (message) => JSON.stringify({ messageId: message.messageId }),
    redactSettings: () => ({}),
    async attempt(_job, _destination, ctx) {
      if (this.calls++ === 0) throw new Error('the type failed before any exchange');
      return [{ url: 'throws-once:', startedAtMs: ctx.clock.now(), latencyMs: 0, statusCode: 200 }];
    },
  };
}

test('an attempt that throws records nothing and stops renewing its lease: the job comes back when the lease runs out', async (t) => {
  const add = cleanups(t);
  const type = throwingOnceType();
  const config = testConfig([], { delivery: { leaseMs } });
  config.destinations.push({ id: 'odd', type: 'ThrowsOnce', name: 'odd', enabled: true, sources: ['app'], settings: {} });
  const clock = new ManualClock();
  const server = await startFerry(config, { clock, deliver: false, destinationTypes: [type] });
  add(() => server.stop());
  const { worker } = server.ferry;
  const errors: unknown[] = [];
  worker.on('worker:error', ({ error }) => errors.push(error));
  assert.equal((await server.send('/v1/track', { userId: 'u1', event: 'E', messageId: 'm1' })).status, 200);

  assert.equal(await worker.tick(), 1);
  await server.settled();
  assert.equal(errors.length, 1);
  assert.equal(worker.leases.size, 0, 'its lease is no longer renewed');
  const [delivery] = (await server.admin('GET', '/deliveries?destinationId=odd')).json.deliveries;
  assert.equal(delivery.status, 'pending');
  assert.equal(delivery.attemptCount, 0, 'nothing recorded');

  assert.equal(await worker.tick(), 0, 'the lease still holds');
  clock.advance(leaseMs);
  assert.equal(await worker.tick(), 1, 'due again once the lease ran out');
  await server.settled();
  assert.equal((await server.admin('GET', `/deliveries/${delivery.id as number}`)).json.status, 'succeeded');
  assert.equal(type.calls, 2);
});
