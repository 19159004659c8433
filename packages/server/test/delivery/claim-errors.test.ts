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
  // The worker's loop runs on real timers every 5 ms; the log's minute runs on the manual clock.
  const config = testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/'])], { delivery: { pollIntervalMs: 5 } });
  const ferry = await startFerry(config, { clock, logger });
  const { worker } = ferry.ferry;
  const failures = (n: number) =>
    within(10_000, `${n} failed claims`, (async () => {
      for (let i = 0; i < n; i++) await once(worker, 'worker:error');
    })());
  try {
    // A real fault: the store goes away under the running worker, and every claim fails alike.
    await ferry.ferry.store.close();
    await failures(20);
    const claimLines = () => lines.filter((l) => l.msg.startsWith('delivery claim failed'));
    assert.equal(claimLines().length, 1, '20 failures within the same minute: one line');
    assert.match(claimLines()[0]!.err.stack, /the store is closed\n\s+at /);

    clock.advance(60_000);
    await failures(1);
    assert.equal(claimLines().length, 2);
    const repeat = claimLines()[1]!;
    assert.match(repeat.msg, /^delivery claim failed; retrying after the poll interval; the same error repeated \d+ times in the last 60 s$/);
    assert.ok(repeat.repeats >= 20, `counted every failure since the first line (${repeat.repeats})`);
    assert.equal(repeat.error, 'the store is closed');
  } finally {
    await ferry.stop();
  }
});
