import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { searchQuery as pgSearchQuery } from '../../src/store/postgres/pg-delivery-reads.js';
import { searchQuery as sqliteSearchQuery } from '../../src/store/sqlite/sqlite-delivery-reads.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { DeliveryFilter } from '../../src/store/store.js';
import { openFreshPgStore, stopPostgres } from '../helpers/postgres.js';
import { inSqliteFile } from '../helpers/sqlite.js';

after(() => stopPostgres());

const limit = 100;
const t0 = Date.parse('2026-01-01T00:00:00.000Z');

/** Each filter of a search, and the index it must be found through on each store. */
const cases: { filter: Omit<DeliveryFilter, 'limit'>; sqlite: string[]; postgres: string[] }[] = [
  { filter: { userId: 'u1' }, sqlite: ['deliveries_user'], postgres: ['deliveries_user'] },
  { filter: { destinationId: 'd1' }, sqlite: ['deliveries_destination'], postgres: ['deliveries_destination'] },
  { filter: { sourceId: 's1' }, sqlite: ['deliveries_source'], postgres: ['deliveries_source'] },
  { filter: { messageId: 'm1' }, sqlite: ['deliveries_message'], postgres: ['deliveries_message'] },
  // Either partial index of dead letters will do: by id, or by destination (the metrics' one).
  { filter: { status: 'dead' }, sqlite: ['deliveries_status'], postgres: ['deliveries_dead(_destination)?'] },
  // The dead-letter filters of `GET /dead-letters` are checked on the rows the dead-letter index finds.
  {
    filter: { status: 'dead', errorClass: 'timeout', deadSinceMs: t0, deadUntilMs: t0 + 1000 },
    sqlite: ['deliveries_status'],
    postgres: ['deliveries_dead(_destination)?'],
  },
  {
    filter: { status: 'dead', destinationId: 'd1', errorClass: 'http' },
    sqlite: ['deliveries_(status|destination|dead_destination)'],
    postgres: ['deliveries_dead(_destination)?|deliveries_destination'],
  },
  { filter: { status: 'pending' }, sqlite: ['deliveries_status'], postgres: ['delivery_queue_pkey'] },
  { filter: { type: 'delete' }, sqlite: ['deliveries_not_event'], postgres: ['deliveries_not_event'] },
  { filter: { anonymousId: 'a1' }, sqlite: ['events_anonymous', 'deliveries_event'], postgres: ['events_anonymous', 'deliveries_event'] },
  { filter: { event: 'Signed Up' }, sqlite: ['events_track', 'deliveries_event'], postgres: ['events_track', 'deliveries_event'] },
  { filter: { type: 'track' }, sqlite: ['events_type', 'deliveries_event'], postgres: ['events_type', 'deliveries_event'] },
  {
    filter: { receivedAfterMs: t0, receivedBeforeMs: t0 + 1000 },
    sqlite: ['events_received', 'deliveries_event'],
    postgres: ['events_received', 'deliveries_event'],
  },
  { filter: { type: 'page', receivedAfterMs: t0 }, sqlite: ['events_type', 'deliveries_event'], postgres: ['events_type', 'deliveries_event'] },
];

const label = (f: object) => JSON.stringify(f);

describe('every filter of a delivery search is found through an index', () => {
  test('sqlite: EXPLAIN QUERY PLAN names the filter’s index, and no scan of a whole table', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-plans-'));
    try {
      const path = join(dir, 'ferry.db');
      await new SqliteStore({ path }).close();
      inSqliteFile(path, (db) => {
        for (const { filter, sqlite } of cases) {
          const { sql, params } = sqliteSearchQuery({ ...filter, limit });
          const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail).join('\n');
          for (const index of sqlite) assert.match(plan, new RegExp(`\\b${index}\\b`), `${label(filter)}:\n${plan}`);
          assert.doesNotMatch(plan, /^SCAN (d|e|events|deliveries)\b(?! USING)/m, `${label(filter)}:\n${plan}`);
        }
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('postgres: EXPLAIN names the filter’s index, with sequential scans priced out as on a large table', async () => {
    const { store, cleanup, inSchema } = await openFreshPgStore(1);
    try {
      await inSchema(async (client) => {
        // An empty table is cheapest to read whole; a large one is not, and that is what this checks.
        await client.query('SET enable_seqscan = off');
        for (const { filter, postgres } of cases) {
          const { sql, params } = pgSearchQuery({ ...filter, limit });
          const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params);
          const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
          for (const index of postgres) assert.match(plan, new RegExp(`\\b${index}\\b`), `${label(filter)}:\n${plan}`);
          assert.doesNotMatch(plan, /Seq Scan on (deliveries|events)\b/, `${label(filter)}:\n${plan}`);
        }
      });
    } finally {
      await store.close();
      await cleanup();
    }
  });
});
