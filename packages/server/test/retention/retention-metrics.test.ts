import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { DAY_MS } from '../../src/model/retention.js';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { stopPostgres } from '../helpers/postgres.js';
import { parsePrometheus } from '../helpers/prometheus.js';
import { until } from '../helpers/until.js';

after(() => stopPostgres());

for (const kind of storeKinds) {
  describe(`retention metrics (${kind})`, () => {
    test("the store's size and rows, and the pruner's runs and deletions, on GET /metrics", async (t) => {
      const clock = new ManualClock(Date.parse('2026-03-01T00:00:00.000Z'));
      const config = testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])], { retention: { events: 1 } });
      const { server } = await startFerryOn(kind, config, { clock, deliver: false, pruneIntervalMs: 60_000 }, cleanups(t));
      // Events without deliveries (no destination takes the source "other"); the last one stays as the newest row.
      const batch = Array.from({ length: 6 }, (_, i) => ({ type: 'track', event: 'E', userId: `u${i}`, messageId: `m${i}` }));
      const sent = await server.send('/v1/batch', { batch }, { writeKey: 'other-write-key' });
      assert.equal(sent.status, 200, JSON.stringify(sent.json));

      const scrape = async () => {
        const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } });
        assert.equal(res.status, 200);
        return parsePrometheus(await res.text());
      };
      const before = await scrape();
      assert.ok((before.value('ferry_store_size_bytes') ?? 0) > 0);
      assert.equal(before.value('ferry_retention_last_prune_timestamp_seconds'), 0);
      assert.equal(before.types.get('ferry_retention_pruned_rows_total'), 'counter');
      assert.equal(before.value('ferry_retention_pruned_rows_total', { kind: 'events' }), 0);
      if (kind === 'sqlite') assert.equal(before.value('ferry_store_rows', { kind: 'events' }), 6);
      else assert.notEqual(before.value('ferry_store_rows', { kind: 'events' }), undefined);

      // Two days later, the run the interval starts deletes all but the newest event.
      clock.advance(2 * DAY_MS);
      await until(() => server.ferry.pruner.lastRun !== undefined, 'a prune run');
      const later = await scrape();
      assert.equal(later.value('ferry_retention_pruned_rows_total', { kind: 'events' }), 5);
      assert.equal(later.value('ferry_retention_last_prune_timestamp_seconds'), clock.now() / 1000);
      if (kind === 'sqlite') assert.equal(later.value('ferry_store_rows', { kind: 'events' }), 1);
    });
  });
}
