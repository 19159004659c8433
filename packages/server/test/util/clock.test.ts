import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ManualClock } from '../../src/util/clock.js';

describe('ManualClock timers', () => {
  test('C01 a timer runs when the clock reaches its due time, not a millisecond before, and sees that time', () => {
    const clock = new ManualClock(1000);
    const seen: number[] = [];
    clock.timers.setTimeout(() => seen.push(clock.now()), 500);
    clock.advance(499);
    assert.deepEqual(seen, []);
    clock.advance(1);
    assert.deepEqual(seen, [1500]);
    clock.advance(10_000);
    assert.deepEqual(seen, [1500], 'a timer runs once');
  });

  test('C02 timers passed by one move run soonest first, each at its own time; ties in the order set', () => {
    const clock = new ManualClock(0);
    const seen: string[] = [];
    clock.timers.setTimeout(() => seen.push(`c@${clock.now()}`), 300);
    clock.timers.setTimeout(() => seen.push(`a@${clock.now()}`), 100);
    clock.timers.setTimeout(() => seen.push(`b@${clock.now()}`), 100);
    clock.advance(1000);
    assert.deepEqual(seen, ['a@100', 'b@100', 'c@300']);
    assert.equal(clock.now(), 1000, 'the clock rests where it was moved');
  });

  test('C03 a cleared timer never runs; clearing twice or clearing undefined is harmless', () => {
    const clock = new ManualClock(0);
    let ran = false;
    const handle = clock.timers.setTimeout(() => (ran = true), 10);
    clock.timers.clearTimeout(handle);
    clock.timers.clearTimeout(handle);
    clock.timers.clearTimeout(undefined);
    clock.advance(100);
    assert.equal(ran, false);
  });

  test('C04 a timer set by a timer runs in the same move when it falls due within it', () => {
    const clock = new ManualClock(0);
    const seen: number[] = [];
    clock.timers.setTimeout(() => {
      seen.push(clock.now());
      clock.timers.setTimeout(() => seen.push(clock.now()), 50);
    }, 100);
    clock.set(200);
    assert.deepEqual(seen, [100, 150]);
  });

  test('C05 moving the clock back runs nothing', () => {
    const clock = new ManualClock(1000);
    let ran = false;
    clock.timers.setTimeout(() => (ran = true), 0);
    clock.set(500);
    assert.equal(ran, false);
    clock.set(1000);
    assert.equal(ran, true);
  });

  test('C06 pendingTimers: the due times of the timers not yet run, soonest first; a timer that ran or was cleared is gone', () => {
    const clock = new ManualClock(1000);
    assert.deepEqual(clock.pendingTimers(), []);
    clock.timers.setTimeout(() => {}, 300);
    const cleared = clock.timers.setTimeout(() => {}, 200);
    clock.timers.setTimeout(() => {}, 100);
    assert.deepEqual(clock.pendingTimers(), [1100, 1200, 1300]);
    clock.timers.clearTimeout(cleared);
    clock.advance(100);
    assert.deepEqual(clock.pendingTimers(), [1300]);
  });
});
