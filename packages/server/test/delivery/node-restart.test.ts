import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { startFerry, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { freshSchema, stopPostgres } from '../helpers/postgres.js';
import { startReceiver } from '../helpers/receiver.js';

after(() => stopPostgres());

test('a node restarted with the same id hands back at start the leases its crashed run held, and sends those jobs at once', async (t) => {
  const add = cleanups(t);
  const { url, schema } = await freshSchema(add);
  const open = () => PgStore.open({ connectionString: url, schema, poolSize: 2 });
  const receiver = await startReceiver();
  add(() => receiver.close());
  const config = testConfig([webhooksDestination('hooks', [receiver.url])]);
  // The clock never moves: a job that waited for its lease to run out would never be sent.
  const clock = new ManualClock();

  // The first run takes the events, without sending.
  const first = await startFerry(config, { store: await open(), clock, nodeId: 'node-a', deliver: false });
  const batch = Array.from({ length: 5 }, (_, i) => ({ type: 'track', event: 'E', userId: 'u1', messageId: `m${i}` }));
  assert.equal((await first.send('/v1/batch', { batch })).status, 200);
  await first.stop();
  // What that run held when it was killed: its leases, under its node id.
  const crashed = await open();
  add(() => crashed.close());
  const held = await crashed.claim({ destinationId: 'hooks', owner: 'node-a', nowMs: clock.now(), leaseMs: 12_000, limit: 10 });
  assert.equal(held.length, 5);

  // Another id does not hand them back: nothing is sent while the clock stands.
  const other = await startFerry(config, { store: await open(), clock, nodeId: 'node-b' });
  assert.equal(await other.ferry.worker.tick(), 0, "node-a's leases hold for node-b");
  await other.stop();

  const restarted = await startFerry(config, { store: await open(), clock, nodeId: 'node-a' });
  add(() => restarted.stop());
  const arrived = await receiver.waitFor(5);
  assert.deepEqual(arrived.map((r) => r.json.messageId as string).sort(), ['m0', 'm1', 'm2', 'm3', 'm4']);
});
