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
    test("the store's size and rows per kind, and the pruner's runs and deletions, on GET /metrics", async (t) => {
      const clock = new ManualClock(Date.parse('2026-03-01T00:00:00.000Z'));
      const config = testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])], { retention: { events: 1 } });
      const { server, rows } = await startFerryOn(kind, config, { clock, deliver: false, pruneIntervalMs: 60_000 }, cleanups(t));
      // A known workload: 6 events without deliveries (no destination takes the source "other"),
      // then 4 events of "app", each with a delivery to hooks (never sent: deliver is off) and
      // one rejected item; nothing attempted.
      const other = Array.from({ length: 6 }, (_, i) => ({ type: 'track', event: 'E', userId: `u${i}`, messageId: `m${i}` }));
      const sent = await server.send('/v1/batch', { batch: other }, { writeKey: 'other-write-key' });
      assert.equal(sent.status, 200, JSON.stringify(sent.json));
      const app = [...Array.from({ length: 4 }, (_, i) => ({ type: 'track', event: 'E', userId: `a${i}`, messageId: `a${i}` })), { event: 'no type' }];
      assert.equal((await server.send('/v1/batch', { batch: app })).status, 200);

      const scrape = async () => {
        const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } });
        assert.equal(res.status, 200);
        return parsePrometheus(await res.text());
      };
      const tables = ['events', 'deliveries', 'attempts', 'rejections', 'audit_log'] as const;
      /** The rows per kind the metrics show, beside a count of each table; PostgreSQL's estimates are the planner's, so analysed first. */
      const rowsPerKind = async () => {
        if (kind === 'postgres') await rows(`ANALYZE ${tables.join(', ')}`);
        const metrics = await scrape();
        const shown: Record<string, number | undefined> = {};
        const counted: Record<string, number> = {};
        for (const table of tables) {
          shown[table] = metrics.value('ferry_store_rows', { kind: table });
          counted[table] = Number((await rows(`SELECT count(*) AS n FROM ${table}`))[0]!['n']);
        }
        return { metrics, shown, counted };
      };

      const before = await rowsPerKind();
      assert.ok((before.metrics.value('ferry_store_size_bytes') ?? 0) > 0);
      assert.equal(before.metrics.value('ferry_retention_last_prune_timestamp_seconds'), 0);
      assert.equal(before.metrics.types.get('ferry_retention_pruned_rows_total'), 'counter');
      assert.equal(before.metrics.value('ferry_retention_pruned_rows_total', { kind: 'events' }), 0);
      assert.deepEqual(
        { events: before.shown['events'], deliveries: before.shown['deliveries'], attempts: before.shown['attempts'], rejections: before.shown['rejections'] },
        { events: 10, deliveries: 4, attempts: 0, rejections: 1 },
      );
      assert.deepEqual(before.shown, before.counted, 'every kind as counted, the audit log included');

      // Two days later, the run the interval starts deletes the 6 events without deliveries; those
      // of "app" stay, their deliveries pending.
      clock.advance(2 * DAY_MS);
      await until(() => server.ferry.pruner.lastRun !== undefined, 'a prune run');
      const later = await rowsPerKind();
      assert.equal(later.metrics.value('ferry_retention_pruned_rows_total', { kind: 'events' }), 6);
      assert.equal(later.metrics.value('ferry_retention_last_prune_timestamp_seconds'), clock.now() / 1000);
      assert.equal(later.shown['events'], 4);
      assert.equal(later.shown['deliveries'], 4);
      assert.deepEqual(later.shown, later.counted);
    });
  });
}
