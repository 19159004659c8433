import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { ManualClock } from '../../src/util/clock.js';
import { capturedLogger } from '../helpers/captured-logger.js';
import { startFerry, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { within } from '../helpers/within.js';

test('a claim that keeps failing is logged once in full, then once a minute with its count', async () => {
  const clock = new ManualClock();
  const { lines, logger } = capturedLogger();
  // The worker's loop and the log's minute both run on the manual clock: each 5 ms it moves
  // is one more claim round.
  const config = testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/'])], { delivery: { pollIntervalMs: 5 } });
  const ferry = await startFerry(config, { clock, logger });
  const { worker } = ferry.ferry;
  /** Moves the clock `stepMs` and waits for the claim round that follows to fail, `n` times. */
  const failures = (n: number, stepMs = 5) =>
    within(
      10_000,
      `${n} failed claims`,
      (async () => {
        for (let i = 0; i < n; i++) {
          const failed = once(worker, 'worker:error');
          clock.advance(stepMs);
          await failed;
        }
      })(),
    );
  try {
    // A real fault: the store goes away under the running worker, and every claim fails alike.
    await ferry.ferry.store.close();
    await failures(20);
    const claimLines = () => lines.filter((l) => l.msg.startsWith('delivery claim failed'));
    assert.equal(claimLines().length, 1, '20 failures within the same minute: one line');
    assert.match(claimLines()[0]!.err.stack, /the store is closed\n\s+at /);

    await failures(1, 60_000);
    assert.equal(claimLines().length, 2);
    const repeat = claimLines()[1]!;
    assert.match(repeat.msg, /^delivery claim failed; retrying after the poll interval; the same error repeated \d+ times in the last 60 s$/);
    assert.ok(repeat.repeats >= 20, `counted every failure since the first line (${repeat.repeats})`);
    assert.equal(repeat.error, 'the store is closed');
  } finally {
    await ferry.stop();
  }
});
