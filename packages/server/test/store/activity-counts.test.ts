/** The store's per-minute activity counts (`activity_counts`), on both stores: adds grow rows, old rows go, totals sum nodes. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { openFreshPgStore, stopPostgres } from '../helpers/postgres.js';

after(() => stopPostgres());

const backends: { name: string; open: () => Promise<{ store: Store; cleanup: () => Promise<void> }> }[] = [
  {
    name: 'sqlite',
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'ferry-activity-'));
      return { store: new SqliteStore({ path: join(dir, 'ferry.db') }), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  { name: 'postgres', open: () => openFreshPgStore(2) },
];

const m = (n: number) => n * 60_000;

for (const backend of backends) {
  describe(`activity counts (${backend.name})`, () => {
    test('an add grows the rows of its node, minute and kind; totals sum every node from a minute on; rows before the bound go', async (t) => {
      const { store, cleanup } = await backend.open();
      t.after(async () => {
        await store.close();
        await cleanup();
      });
      const { activity } = store;
      await activity.add(
        'a',
        [
          { minuteMs: m(1), kind: 'accepted', count: 3 },
          { minuteMs: m(2), kind: 'dead', count: 1 },
        ],
        0,
      );
      await activity.add('a', [{ minuteMs: m(1), kind: 'accepted', count: 2 }], 0);
      await activity.add(
        'b',
        [
          { minuteMs: m(1), kind: 'accepted', count: 10 },
          { minuteMs: m(1), kind: 'delivered', count: 4 },
        ],
        0,
      );
      assert.deepEqual(await activity.totals(m(1)), [
        { minuteMs: m(1), kind: 'accepted', count: 15 },
        { minuteMs: m(1), kind: 'delivered', count: 4 },
        { minuteMs: m(2), kind: 'dead', count: 1 },
      ]);
      assert.deepEqual(await activity.totals(m(2)), [{ minuteMs: m(2), kind: 'dead', count: 1 }]);

      // A flush with nothing to add still deletes what is past the bound, every node's.
      await activity.add('c', [], m(2));
      assert.deepEqual(await activity.totals(0), [{ minuteMs: m(2), kind: 'dead', count: 1 }]);
    });
  });
}
