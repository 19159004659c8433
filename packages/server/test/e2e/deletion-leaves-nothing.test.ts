import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { Store } from '../../src/store/store.js';
import { ManualClock } from '../../src/util/clock.js';
import { startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { openFreshPgStore, stopPostgres } from '../helpers/postgres.js';
import { inSqliteFile } from '../helpers/sqlite.js';
import { startReceiver } from '../helpers/receiver.js';
import { turn } from '../helpers/until.js';

after(() => stopPostgres());

/**
 * Everything that can name the user: their id, the ids linked to it (an anonymous id before
 * login, an id they had before an alias, one they were given after), their email, and a
 * property value found nowhere else.
 */
const userId = 'victim-42';
const traces = [userId, 'device-7f3a', 'legacy-981', 'renamed-555', 'ada.victim@example.com', 'tangerine-7781'];

/** A row holding one of the traces: its table, the traces it holds, and the row as text. */
interface Hit {
  table: string;
  found: string[];
  row: Record<string, unknown>;
}

interface Backend {
  name: 'sqlite' | 'postgres';
  /**
   * The store to give Ferry (none: SQLite in the Ferry's data directory), how to drop it
   * after, and how to search every row of every table of its database, each as text, for the
   * traces, over a connection of the test's own.
   */
  open(): Promise<{ store?: Store; cleanup: () => Promise<void>; search: (ferry: TestFerry) => Promise<Hit[]> }>;
}

function hitsIn(table: string, rows: Record<string, unknown>[]): Hit[] {
  return rows.flatMap((row) => {
    const text = JSON.stringify(row);
    const found = traces.filter((t) => text.includes(t));
    return found.length > 0 ? [{ table, found, row }] : [];
  });
}

const backends: Backend[] = [
  {
    name: 'sqlite',
    open: async () => ({
      cleanup: async () => {},
      search: async (ferry) =>
        inSqliteFile(join(ferry.dataDir, 'ferry.db'), (db) => {
          const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).pluck().all() as string[];
          return tables.flatMap((t) => hitsIn(t, db.prepare(`SELECT * FROM "${t}"`).all() as Record<string, unknown>[]));
        }),
    }),
  },
  {
    name: 'postgres',
    open: async () => {
      const { store, cleanup, inSchema } = await openFreshPgStore();
      return {
        store,
        cleanup,
        search: () =>
          inSchema(async (client) => {
            const { rows: tables } = await client.query<{ name: string }>(
              `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
            );
            const hits: Hit[] = [];
            // row_to_json: every column as text, whatever its type.
            for (const { name } of tables)
              hits.push(
                ...hitsIn(
                  name,
                  (await client.query<{ r: Record<string, unknown> }>(`SELECT row_to_json(t) AS r FROM "${name}" t`)).rows.map((x) => x.r),
                ),
              );
            return hits;
          }),
      };
    },
  },
];

/** The traces found in the bytes of the SQLite files that exist (the database, its WAL and its WAL index). */
function tracesInFiles(dataDir: string): { file: string; found: string[] }[] {
  return ['ferry.db', 'ferry.db-wal', 'ferry.db-shm']
    .map((name) => join(dataDir, name))
    .filter((file) => existsSync(file))
    .map((file) => {
      const bytes = readFileSync(file);
      return { file, found: traces.filter((t) => bytes.includes(Buffer.from(t))) };
    })
    .filter((f) => f.found.length > 0);
}

for (const backend of backends) {
  describe(`a deletion request leaves nothing of the user (${backend.name})`, () => {
    test('stored through every path, deleted, then found nowhere but in the notices until they are delivered', async (t) => {
      const { store, cleanup, search } = await backend.open();
      t.after(cleanup);
      let failing = true;
      // Every receiver echoes the body it got, as some do, so the attempt log holds the user too.
      const receiver = await startReceiver((req) => ({ status: req.path === '/failing' && failing ? 503 : 200, body: req.body.toString() }));
      t.after(() => receiver.close());
      const clock = new ManualClock(Date.parse('2026-07-01T00:00:00.000Z'));
      const ferry = await startFerry(
        testConfig(
          [
            webhooksDestination('hooks', [`${receiver.url}/hooks`], { sources: ['app', 'other'] }),
            // Its breaker off: every notice must be attempted (an open circuit would hold them).
            webhooksDestination('failing', [`${receiver.url}/failing`], { sources: ['app'], circuitBreaker: { enabled: false } }),
          ],
          { audiences: { syncIntervalMs: 86_400_000 } },
        ),
        { clock, deliver: false, ...(store ? { store } : {}) },
      );
      let stopped = false;
      t.after(async () => {
        if (!stopped) await ferry.ferry.stop();
        rmSync(ferry.dataDir, { recursive: true, force: true });
      });

      // Anonymous first, in another source, then identified; aliases both ways; a rejected message.
      const other = { writeKey: 'other-write-key' };
      assert.equal((await ferry.send('/v1/track', { anonymousId: 'device-7f3a', event: 'Viewed', properties: { code: 'tangerine-7781' } }, other)).status, 200);
      assert.equal((await ferry.send('/v1/track', { userId: 'legacy-981', event: 'Old Login' })).status, 200);
      const batch = await ferry.send('/v1/batch', {
        batch: [
          { type: 'identify', userId, anonymousId: 'device-7f3a', traits: { email: 'ada.victim@example.com', plan: 'pro' } },
          { type: 'track', userId, event: 'Order Completed', properties: { code: 'tangerine-7781' } },
          { type: 'alias', previousId: 'legacy-981', userId },
          { type: 'alias', previousId: userId, userId: 'renamed-555' },
          { type: 'track', userId: 'renamed-555', event: 'Renamed', properties: { code: 'tangerine-7781' } },
          { type: 'track', userId, event: 'Bad Clock', timestamp: 'ada.victim@example.com' },
          { type: 'track', userId: 'bystander', event: 'Order Completed', properties: { code: 'plum-1' } },
        ],
      });
      assert.deepEqual(
        batch.json.rejected.map((r: { code: string }) => r.code),
        ['invalid_timestamp'],
      );
      await ferry.idle();
      // A second attempt of the failing ones: PostgreSQL keeps a first attempt in the delivery's row, later ones in `attempts`.
      clock.advance(3_600_000);
      await ferry.idle();
      // An audience the user is a member of, synced to a destination.
      const audience = await ferry.admin('POST', '/audiences', {
        id: 'pro',
        name: 'Pro',
        destinationIds: ['hooks'],
        rule: { type: 'trait', trait: 'plan', equals: 'pro' },
      });
      assert.equal(audience.status, 201, JSON.stringify(audience.json));
      await ferry.idle();
      const audienceSent = receiver.requests.find((r) => r.json.type === 'identify' && r.json.traits?.pro === true);
      assert.equal(audienceSent?.json.userId, userId);

      // The search can fail: every trace is there before.
      const before = await search(ferry);
      assert.deepEqual([...new Set(before.flatMap((h) => h.found))].sort(), [...traces].sort());
      for (const table of ['events', 'deliveries', 'attempts', 'audience_members'])
        assert.ok(
          before.some((h) => h.table === table),
          `${table} held the user before`,
        );

      const requested = await ferry.admin('POST', '/regulations', { userIds: [userId] });
      assert.equal(requested.status, 202);
      await ferry.deletionsDone();
      // The WAL is truncated at the next turn: the first truncation of this store is due at once.
      await turn();
      const done = (await ferry.admin('GET', `/regulations/${requested.json.id}`)).json;
      assert.deepEqual([done.status, done.userIds, done.userCount], ['done', [], 1]);

      // What remains: the user id in the notice queued for each destination of an affected
      // source (the user was in both), in its row and its body; nothing else.
      const queued = await search(ferry);
      assert.deepEqual(queued.map((h) => [h.table, h.row['kind'], h.row['destination_id'], h.row['status'], h.found]).sort(), [
        ['deliveries', 'delete', 'failing', 'pending', [userId]],
        ['deliveries', 'delete', 'hooks', 'pending', [userId]],
      ]);
      const bystander = (await ferry.admin('GET', '/stats')).json;
      assert.equal(bystander.events, 1, "the bystander's event stays");
      if (backend.name === 'sqlite')
        assert.deepEqual(
          tracesInFiles(ferry.dataDir)
            .map((f) => f.found.filter((t) => t !== userId))
            .filter((found) => found.length > 0),
          [],
          'no byte of anything but the notices in the files',
        );

      // The failing destination's notice is retried, its attempt (echoing its body) logged with
      // it; the other is deleted once delivered.
      await ferry.idle();
      const retried = (await search(ferry)).map((h) => `${h.table} ${h.row['destination_id'] ?? ''}`).sort();
      assert.deepEqual(retried, backend.name === 'sqlite' ? ['attempts ', 'deliveries failing'] : ['deliveries failing']);
      failing = false;
      clock.advance(3_600_000);
      await ferry.idle();
      // The truncation after a delivered notice: the interval since the last one has passed, so it is due at once.
      await turn();
      const notices = receiver.requests.filter((r) => r.json.type === 'delete');
      assert.deepEqual(notices.map((r) => r.path).sort(), ['/failing', '/failing', '/hooks']);
      assert.deepEqual(await search(ferry), [], 'nothing left in any table');
      if (backend.name === 'sqlite') assert.deepEqual(tracesInFiles(ferry.dataDir), [], 'nor in the bytes of the files while running');

      await ferry.ferry.stop();
      stopped = true;
      if (backend.name === 'sqlite') {
        assert.ok(existsSync(join(ferry.dataDir, 'ferry.db')));
        assert.deepEqual(tracesInFiles(ferry.dataDir), [], 'nor after a clean stop');
      }
    });
  });
}
