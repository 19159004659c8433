import assert from 'node:assert/strict';
import { describe, mock, test } from 'node:test';
import { Batcher } from '../../src/util/batcher.js';

/** A batch runner whose batches finish only when the test says so. */
function controlled() {
  const batches: { items: number[]; finish: (fail?: Error) => void }[] = [];
  const run = (items: number[]) =>
    new Promise<number[]>((resolve, reject) => batches.push({ items, finish: (fail) => (fail ? reject(fail) : resolve(items.map((i) => i * 10))) }));
  return { batches, run };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('Batcher', () => {
  test('calls of one turn share a batch; calls made while it runs wait and go together in the next', async () => {
    const c = controlled();
    const b = new Batcher(c.run, { maxBatch: 100, parallel: 1 });
    const first = [b.add(1), b.add(2)];
    await turn();
    assert.deepEqual(
      c.batches.map((x) => x.items),
      [[1, 2]],
    );
    const second = [b.add(3), b.add(4), b.add(5)];
    await turn();
    assert.equal(c.batches.length, 1, 'nothing more starts while the only lane is busy');
    c.batches[0]!.finish();
    assert.deepEqual(await Promise.all(first), [10, 20]);
    await turn();
    assert.deepEqual(
      c.batches.map((x) => x.items),
      [
        [1, 2],
        [3, 4, 5],
      ],
    );
    c.batches[1]!.finish();
    assert.deepEqual(await Promise.all(second), [30, 40, 50]);
  });

  test('maxBatch splits a long queue; parallel lets that many batches run at once', async () => {
    const c = controlled();
    const b = new Batcher(c.run, { maxBatch: 2, parallel: 2 });
    const all = [1, 2, 3, 4, 5].map((i) => b.add(i));
    await turn();
    assert.deepEqual(
      c.batches.map((x) => x.items),
      [
        [1, 2],
        [3, 4],
      ],
    );
    c.batches[0]!.finish();
    await turn();
    assert.deepEqual(
      c.batches.map((x) => x.items),
      [[1, 2], [3, 4], [5]],
    );
    c.batches[1]!.finish();
    c.batches[2]!.finish();
    assert.deepEqual(await Promise.all(all), [10, 20, 30, 40, 50]);
  });

  test('a failed batch rejects each of its calls and no other; drained() waits for everything', async () => {
    const c = controlled();
    const b = new Batcher(c.run, { maxBatch: 1, parallel: 1 });
    const bad = b.add(1);
    const good = b.add(2);
    let drained = false;
    void b.drained().then(() => (drained = true));
    await turn();
    c.batches[0]!.finish(new Error('connection lost'));
    await assert.rejects(bad, /connection lost/);
    await turn();
    assert.equal(drained, false, 'one call is still under way');
    c.batches[1]!.finish();
    assert.equal(await good, 20);
    await turn();
    assert.equal(drained, true);
  });

  test('a runner that throws synchronously fails its batch instead of the caller', async () => {
    const b = new Batcher<number, number>(
      () => {
        throw new Error('bad statement');
      },
      { maxBatch: 10, parallel: 1 },
    );
    await assert.rejects(b.add(1), /bad statement/);
    await b.drained();
  });

  test('with minIntervalMs, a batch starts at most that often: calls made sooner wait for it and go together', async () => {
    // The interval's clock is injected; its timer is node:test's.
    let nowMs = 1_000;
    const advance = (ms: number) => {
      nowMs += ms;
      mock.timers.tick(ms);
    };
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const c = controlled();
      const b = new Batcher(c.run, { maxBatch: 3, parallel: 1, minIntervalMs: 10, now: () => nowMs });
      const first = b.add(1);
      await turn();
      assert.deepEqual(
        c.batches.map((x) => x.items),
        [[1]],
        'after a quiet spell the first call goes at once',
      );
      c.batches[0]!.finish();
      assert.equal(await first, 10);
      const later = [b.add(2), b.add(3)];
      await turn();
      assert.equal(c.batches.length, 1, 'the last batch started less than 10 ms ago');
      advance(9);
      await turn();
      assert.equal(c.batches.length, 1);
      advance(1);
      await turn();
      assert.deepEqual(
        c.batches.map((x) => x.items),
        [[1], [2, 3]],
        'both went together once the interval was over',
      );
      c.batches[1]!.finish();
      assert.deepEqual(await Promise.all(later), [20, 30]);
      const full = [b.add(4), b.add(5), b.add(6), b.add(7)];
      await turn();
      assert.deepEqual(
        c.batches.map((x) => x.items),
        [[1], [2, 3], [4, 5, 6]],
        'maxBatch calls waiting do not wait for the interval',
      );
      c.batches[2]!.finish();
      await turn();
      assert.equal(c.batches.length, 3, 'the one left waits again');
      let drained = false;
      void b.drained().then(() => (drained = true));
      advance(10);
      await turn();
      assert.deepEqual(
        c.batches.map((x) => x.items),
        [[1], [2, 3], [4, 5, 6], [7]],
      );
      await turn();
      assert.equal(drained, false, 'its batch is still under way');
      c.batches[3]!.finish();
      assert.deepEqual(await Promise.all(full), [40, 50, 60, 70]);
      await turn();
      assert.equal(drained, true, 'drained() waited for the call held by the interval');
    } finally {
      mock.timers.reset();
    }
  });

  test('a wait for the interval never outlasts the interval, whatever the clock says', async () => {
    let nowMs = 50_000;
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const c = controlled();
      const b = new Batcher(c.run, { maxBatch: 10, parallel: 1, minIntervalMs: 10, now: () => nowMs });
      void b.add(1);
      await turn();
      c.batches[0]!.finish();
      await turn();
      // A clock that went back a minute must not hold the next call for a minute.
      nowMs -= 60_000;
      void b.add(2);
      await turn();
      assert.deepEqual(
        c.batches.map((x) => x.items),
        [[1], [2]],
      );
      c.batches[1]!.finish();
      // Nor one that stalls: the timer ends the wait when the interval has passed.
      nowMs += 1;
      void b.add(3);
      await turn();
      assert.equal(c.batches.length, 2);
      mock.timers.tick(10);
      await turn();
      assert.deepEqual(
        c.batches.map((x) => x.items),
        [[1], [2], [3]],
      );
      c.batches[2]!.finish();
      await b.drained();
    } finally {
      mock.timers.reset();
    }
  });
});
