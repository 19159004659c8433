import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { RegulationRunner } from '../../src/regulations/regulation-runner.js';
import { Catalog } from '../../src/routing/catalog.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { NewEvent, Store } from '../../src/store/store.js';
import { ManualClock } from '../../src/util/clock.js';
import { capturedLogger } from '../helpers/captured-logger.js';
import { openFreshPgStore, stopPostgres } from '../helpers/postgres.js';
import { turn } from '../helpers/until.js';

after(() => stopPostgres());

const t0 = Date.parse('2026-06-01T00:00:00.000Z');
const eventCount = 200;

const backends: { name: string; open: () => Promise<{ store: Store; cleanup: () => Promise<void> }> }[] = [
  {
    name: 'sqlite',
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'ferry-runner-'));
      return { store: new SqliteStore({ path: join(dir, 'ferry.db') }), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  { name: 'postgres', open: () => openFreshPgStore() },
];

function event(i: number): NewEvent {
  const messageId = `m${i}`;
  return { sourceId: 'app', messageId, type: 'track', userId: 'u1', event: 'E', receivedAtMs: t0, json: JSON.stringify({ messageId }), deliveries: [] };
}

async function runnerOn(store: Store): Promise<RegulationRunner> {
  const clock = new ManualClock(t0);
  const catalog = new Catalog(store, clock);
  await catalog.reload();
  return new RegulationRunner({ store, catalog, clock, logger: capturedLogger().logger, batchSize: 1 });
}

for (const backend of backends) {
  describe(`deletion requests and a stop (${backend.name})`, () => {
    test('a stop ends the request running at its next batch: it stays pending, and the next start finishes it', async (t) => {
      const { store, cleanup } = await backend.open();
      t.after(async () => {
        await store.close();
        await cleanup();
      });
      await store.ingest({ receivedAtMs: t0, events: Array.from({ length: eventCount }, (_, i) => event(i)), rejections: [] });
      const first = await runnerOn(store);
      const { id } = await first.submit(['u1'], null);
      // Until some batches are through, one turn at a time (each batch commits on its own).
      const deadline = Date.now() + 10_000;
      while (((await store.getRegulation(id))?.eventsDeleted ?? 0) < 3) {
        assert.ok(Date.now() < deadline, 'the purge began');
        await turn();
      }
      await first.stop();
      const stopped = (await store.getRegulation(id))!;
      assert.equal(stopped.status, 'pending');
      assert.ok(stopped.eventsDeleted < eventCount, `stopped mid-way (${stopped.eventsDeleted} of ${eventCount} deleted), not run to its end`);
      const atStop = stopped.eventsDeleted;
      for (let i = 0; i < 5; i += 1) await turn();
      assert.equal((await store.getRegulation(id))!.eventsDeleted, atStop, 'no batch after the stop');

      const next = await runnerOn(store);
      await next.resumePending();
      await next.idle();
      const done = (await store.getRegulation(id))!;
      assert.deepEqual([done.status, done.eventsDeleted, done.userIds], ['done', eventCount, []]);
      assert.equal((await store.stats()).events, 0);
    });

    test('a request submitted after a stop is stored, pending, and not carried out', async (t) => {
      const { store, cleanup } = await backend.open();
      t.after(async () => {
        await store.close();
        await cleanup();
      });
      await store.ingest({ receivedAtMs: t0, events: [event(1)], rejections: [] });
      const runner = await runnerOn(store);
      await runner.stop();
      const { id } = await runner.submit(['u1'], null);
      await runner.idle();
      assert.equal((await store.getRegulation(id))!.status, 'pending');
      assert.equal((await store.stats()).events, 1);
    });
  });
}
