import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AttemptWindows, windowSlotMs } from '../../src/metrics/attempt-windows.js';

const t0 = Date.parse('2026-01-01T00:00:00.000Z');

test('percentiles of a known spread, within the bins’ 12 %', () => {
  const w = new AttemptWindows();
  // 1..1000 ms, one exchange each: the true p50 is 500 ms, p99 990 ms.
  for (let ms = 1; ms <= 1000; ms++) w.recordLatency('d', ms, t0);
  const s = w.stats('d', '5m', t0);
  assert.ok(Math.abs(s.p50Ms! - 500) / 500 <= 0.12, `p50 ${s.p50Ms}`);
  assert.ok(Math.abs(s.p99Ms! - 990) / 990 <= 0.12, `p99 ${s.p99Ms}`);
});

test('counts leave the 5-minute window before the hour’s, and a slot reused an hour later starts empty', () => {
  const w = new AttemptWindows();
  w.recordAttempt('d', true, t0);
  w.recordAttempt('d', false, t0);
  w.recordAttempt('other', true, t0);
  assert.deepEqual(w.stats('d', '5m', t0), { attempts: 2, succeeded: 1, successRate: 0.5, p50Ms: null, p99Ms: null });
  assert.equal(w.stats('d', '5m', t0 + 5 * 60_000 - windowSlotMs).attempts, 2, 'still inside at the window’s last slot');
  assert.equal(w.stats('d', '5m', t0 + 5 * 60_000).attempts, 0);
  assert.equal(w.stats('d', '1h', t0 + 5 * 60_000).attempts, 2);
  assert.equal(w.stats('d', '1h', t0 + 60 * 60_000).attempts, 0);
  // An hour on, the same slot of the ring: the old counts are not added to the new.
  w.recordAttempt('d', true, t0 + 60 * 60_000);
  assert.deepEqual(w.stats('d', '1h', t0 + 60 * 60_000), { attempts: 1, succeeded: 1, successRate: 1, p50Ms: null, p99Ms: null });
  assert.equal(w.stats('none', '1h', t0).successRate, null);
});

test('slots never used between two used ones are holes the stats pass over (regression: a TypeError answered 500)', () => {
  const w = new AttemptWindows();
  const t0 = 10 * windowSlotMs;
  w.recordAttempt('d', true, t0);
  w.recordAttempt('d', false, t0 + 2 * windowSlotMs);
  assert.equal(w.stats('d', '5m', t0 + 2 * windowSlotMs).attempts, 2);
});
