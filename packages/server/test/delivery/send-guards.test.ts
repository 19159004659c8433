/**
 * The guard stage: a per-endpoint check consulted before each send may hold a destination
 * until a time. A toy guard holds one destination; its jobs wait unsent, with no attempt made,
 * while the other destination is served, and go out once the hold ends.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { DestinationConfig } from '../../src/config/model.js';
import type { SendGuard } from '../../src/delivery/guards.js';
import { ManualClock } from '../../src/util/clock.js';
import { startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';

/** Holds `held` until `untilMs`, and notes every destination it was asked about. */
function toyGuard(held: string, untilMs: number): SendGuard & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    holdUntil(destination: DestinationConfig, nowMs: number) {
      asked.push(destination.id);
      return destination.id === held && nowMs < untilMs ? untilMs : undefined;
    },
  };
}

describe('send guards', () => {
  let receiver: TestReceiver;
  let ferry: TestFerry;
  afterEach(async () => {
    await ferry.stop();
    await receiver.close();
  });

  async function setup(clock: ManualClock, guard: SendGuard, deliver: boolean) {
    receiver = await startReceiver({ status: 200 });
    const config = testConfig([webhooksDestination('held', [`${receiver.url}/held`]), webhooksDestination('open', [`${receiver.url}/open`])]);
    ferry = await startFerry(config, { clock, deliver, sendGuards: [guard] });
    const batch = ['m-1', 'm-2', 'm-3'].map((messageId) => ({ type: 'track', userId: 'u1', event: 'E', messageId }));
    assert.equal((await ferry.send('/v1/batch', { batch })).status, 200);
  }

  const arrivedAt = (path: string) => receiver.requests.filter((r) => r.path === path).length;
  const deliveriesOf = async (id: string) =>
    (await ferry.admin('GET', `/deliveries?destinationId=${id}`)).json.deliveries as { status: string; attemptCount: number }[];

  test('G01 a held destination sends nothing and makes no attempt until the hold ends; the other is served meanwhile', async () => {
    const clock = new ManualClock();
    const openAt = clock.now() + 30_000;
    const guard = toyGuard('held', openAt);
    await setup(clock, guard, false);

    await ferry.idle();
    assert.equal(arrivedAt('/open'), 3);
    assert.equal(arrivedAt('/held'), 0);
    assert.ok(guard.asked.includes('open') && guard.asked.includes('held'), 'the guard is consulted for every destination');
    assert.deepEqual(
      (await deliveriesOf('held')).map((d) => [d.status, d.attemptCount]),
      [
        ['pending', 0],
        ['pending', 0],
        ['pending', 0],
      ],
    );

    // Still held one millisecond before the end: not even claimed.
    clock.set(openAt - 1);
    assert.equal(await ferry.ferry.worker.tick(), 0);
    await ferry.settled();
    assert.equal(arrivedAt('/held'), 0);

    clock.set(openAt);
    await ferry.idle();
    assert.equal(arrivedAt('/held'), 3);
    assert.deepEqual(
      (await deliveriesOf('held')).map((d) => [d.status, d.attemptCount]),
      [
        ['succeeded', 1],
        ['succeeded', 1],
        ['succeeded', 1],
      ],
    );
  });

  test('G02 the running loop waits for the hold to end on the clock, then sends', async () => {
    const clock = new ManualClock();
    const openAt = clock.now() + 30_000;
    await setup(clock, toyGuard('held', openAt), true);
    await receiver.waitFor(3);
    assert.equal(arrivedAt('/held'), 0);
    // The poll interval (1 s by default) comes round many times before the hold ends; the
    // loop asks the guard again each time the clock moves it.
    clock.set(openAt);
    await receiver.waitFor(6);
    assert.equal(arrivedAt('/held'), 3);
  });
});
