import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Histogram, Registry, type Metric } from 'prom-client';
import { AttemptWindows } from '../../src/metrics/attempt-windows.js';
import { DeliveryCounts } from '../../src/metrics/delivery-counts.js';
import { parsePrometheus } from '../helpers/prometheus.js';

const t0 = Date.parse('2026-01-01T00:00:00.000Z');
const bounds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const latenciesMs = [0, 3, 5, 6, 10, 11, 99, 100, 101, 2_500, 29_999, 30_000, 30_001, 120_000];

test("the histogram a scrape writes is prom-client's own, sample for sample", async () => {
  // The same latencies observed by prom-client's Histogram, the reference for buckets, sum and count.
  const reference = new Registry();
  const histogram = new Histogram({ name: 'ferry_delivery_duration_seconds', help: 'h', labelNames: ['destination'], buckets: bounds, registers: [reference] });
  const counts = new DeliveryCounts(bounds, new AttemptWindows());
  const ours = new Registry();
  ours.registerMetric(counts.durationSeries('ferry_delivery_duration_seconds', 'h') as unknown as Metric);
  for (const [destination, factor] of [
    ['hooks', 1],
    ['slow', 3],
  ] as const)
    for (const ms of latenciesMs) {
      histogram.observe({ destination }, (ms * factor) / 1000);
      counts.exchanged(destination, ms * factor, t0);
    }
  const expected = parsePrometheus(await reference.metrics());
  const actual = parsePrometheus(await ours.metrics());
  assert.equal(actual.types.get('ferry_delivery_duration_seconds'), 'histogram');
  const key = (s: { name: string; labels: Record<string, string> }) => `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`;
  const byKey = (samples: typeof actual.samples) => new Map(samples.map((s) => [key(s), s.value]));
  const want = byKey(expected.samples);
  const got = byKey(actual.samples);
  assert.equal(got.size, want.size);
  for (const [k, v] of want) assert.ok(Math.abs((got.get(k) ?? NaN) - v) < 1e-9, `${k}: ${got.get(k)} != ${v}`);
  assert.equal(actual.value('ferry_delivery_duration_seconds_bucket', { destination: 'hooks', le: '0.005' }), 3, 'a bound holds what equals it');
});

test('attempts by outcome, and the windows of the stats fed from the same calls', async () => {
  const windows = new AttemptWindows();
  const counts = new DeliveryCounts(bounds, windows);
  const registry = new Registry();
  registry.registerMetric(counts.attemptsSeries('ferry_delivery_attempts_total', 'a') as unknown as Metric);
  assert.equal(parsePrometheus(await registry.metrics()).samples.length, 0, 'no destination, no sample');
  counts.recorded('hooks', 'succeeded', t0);
  counts.recorded('hooks', 'succeeded', t0);
  counts.recorded('hooks', 'pending', t0);
  counts.recorded('gone', 'dead', t0);
  counts.exchanged('hooks', 40, t0);
  const s = parsePrometheus(await registry.metrics());
  assert.equal(s.types.get('ferry_delivery_attempts_total'), 'counter');
  assert.deepEqual(
    ['success', 'retry', 'dead'].map((outcome) => [
      s.value('ferry_delivery_attempts_total', { destination: 'hooks', outcome }),
      s.value('ferry_delivery_attempts_total', { destination: 'gone', outcome }),
    ]),
    [
      [2, 0],
      [1, 0],
      [0, 1],
    ],
  );
  const stats = windows.stats('hooks', '5m', t0);
  assert.deepEqual([stats.attempts, stats.succeeded, stats.p50Ms !== null], [3, 2, true]);
});
