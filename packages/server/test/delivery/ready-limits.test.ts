import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defaultDeliverySettings } from '../../src/config/defaults.js';
import { readyLimits, RecentSlowest } from '../../src/delivery/ready-limits.js';

// The formula's cases below were worked out on a 60 s lease (the default until leases were renewed).
const settings = { ...defaultDeliverySettings, leaseMs: 60_000, claimBatchSize: 400 };

describe('jobs held ready', () => {
  test('with no exchange seen, every exchange is assumed to take the whole timeout: 5 per slot with a 60 s lease and 5 s timeout', () => {
    assert.deepEqual(readyLimits(settings, { destination: undefined, any: undefined }), { perDestination: 80, total: 320 });
  });

  test('a destination that answers fast may hold a whole claim batch; over all, as many per slot as a destination at that depth', () => {
    assert.deepEqual(readyLimits(settings, { destination: 2, any: 2 }), { perDestination: 400, total: 64 * 25 });
    // Faster than a millisecond counts as one: never a division by zero or an unbounded depth.
    assert.deepEqual(readyLimits(settings, { destination: 0, any: 0 }), { perDestination: 400, total: 64 * 25 });
  });

  test('the depth follows the slowest recent exchange; one slower than the timeout counts as the timeout', () => {
    // (60,000 − 6,000) / (2 × 1,000) = 27 per slot, capped by the claim batch.
    assert.equal(readyLimits(settings, { destination: 1000, any: 1000 }).perDestination, 400);
    // 54,000 / (2 × 2,500) = 10 per slot.
    assert.equal(readyLimits(settings, { destination: 2500, any: 2500 }).perDestination, 160);
    // Slower than the timeout is the timeout (an exchange cannot take longer).
    assert.equal(readyLimits(settings, { destination: 60_000, any: 60_000 }).perDestination, 80);
    // One slow destination makes the global budget shallow, not the fast one's own.
    assert.deepEqual(readyLimits(settings, { destination: 2, any: 5000 }), { perDestination: 400, total: 320 });
  });

  test('the default 12 s lease with a 5 s timeout holds nothing ready for an endpoint of unknown pace, a claim batch for a fast one', () => {
    const defaults = { ...defaultDeliverySettings, claimBatchSize: 400 };
    assert.deepEqual(readyLimits(defaults, { destination: undefined, any: undefined }), { perDestination: 0, total: 0 });
    // (12,000 − 6,000) / (2 × 2) = 1,500 per slot: the claim batch.
    assert.deepEqual(readyLimits(defaults, { destination: 2, any: 2 }), { perDestination: 400, total: 64 * 25 });
    // (12,000 − 6,000) / (2 × 1,000) = 3 per slot.
    assert.equal(readyLimits(defaults, { destination: 1000, any: 1000 }).perDestination, 48);
  });

  test('a lease under 3 x timeoutMs + 1000 holds nothing ready, unless exchanges are seen to be far shorter than the timeout', () => {
    assert.equal(readyLimits({ ...settings, timeoutMs: 5000, leaseMs: 11_000 }, { destination: 1, any: 1 }).perDestination, 400);
    assert.deepEqual(readyLimits({ ...settings, timeoutMs: 5000, leaseMs: 11_000 }, { destination: undefined, any: undefined }), {
      perDestination: 0,
      total: 0,
    });
  });
});

describe('RecentSlowest', () => {
  test('keeps the slowest of the current window and of the one before, then forgets it', () => {
    const r = new RecentSlowest(1000);
    assert.equal(r.value(0), undefined);
    r.record(5, 0);
    r.record(300, 100);
    r.record(7, 200);
    assert.equal(r.value(900), 300);
    r.record(2, 1000); // a new window: the previous one's 300 still counts
    assert.equal(r.value(1500), 300);
    assert.equal(r.value(2000), 2, 'two windows later only the recent value is left');
    assert.equal(r.value(4500), undefined, 'nothing recorded for two windows');
  });

  test('a clock that goes back starts a new window rather than keeping an old value forever', () => {
    const r = new RecentSlowest(1000);
    r.record(500, 10_000);
    r.record(3, 9000);
    assert.equal(r.value(9100), 3);
  });
});
