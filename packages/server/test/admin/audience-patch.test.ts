import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { cleanups } from '../helpers/cleanups.js';
import { startFerry, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { freshSchema, stopPostgres } from '../helpers/postgres.js';

after(() => stopPostgres());

const backends: { name: string; open: (onCleanup: (fn: () => Promise<void> | void) => void) => Promise<Store> }[] = [
  {
    name: 'sqlite',
    open: async (onCleanup) => {
      const dir = mkdtempSync(join(tmpdir(), 'ferry-audience-'));
      onCleanup(() => rmSync(dir, { recursive: true, force: true }));
      return new SqliteStore({ path: join(dir, 'ferry.db') });
    },
  },
  {
    name: 'postgres',
    open: async (onCleanup) => {
      const { url, schema } = await freshSchema(onCleanup);
      return PgStore.open({ connectionString: url, schema });
    },
  },
];

for (const backend of backends) {
  describe(`audiences changed in place on ${backend.name}`, () => {
    test('PATCH changes the rule and name without resending the members; the next sync diffs against them', async (t) => {
      const onCleanup = cleanups(t);
      const ferry = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]), {
        store: await backend.open(onCleanup),
        deliver: false,
      });
      onCleanup(() => ferry.stop());
      // u1..u3 bought twice, u4 and u5 once.
      const batch = ['u1', 'u2', 'u3', 'u4', 'u5', 'u1', 'u2', 'u3'].map((userId) => ({ type: 'track', userId, event: 'Bought' }));
      assert.equal((await ferry.send('/v1/batch', { batch })).status, 200);
      const created = await ferry.admin('POST', '/audiences', {
        id: 'buyers',
        name: 'Buyers',
        destinationIds: ['hooks'],
        rule: { type: 'event', event: 'Bought' },
      });
      assert.equal(created.status, 201);
      assert.equal(created.json.sync.added, 5);
      const sent = async () => (await ferry.admin('GET', '/deliveries?type=audience&limit=1000')).json.deliveries.length;
      assert.equal(await sent(), 5);

      const patched = await ferry.admin('PATCH', '/audiences/buyers', { name: 'Big Buyers', rule: { minCount: 2 } });
      assert.equal(patched.status, 200, JSON.stringify(patched.json));
      assert.deepEqual(
        [patched.json.name, patched.json.trait, patched.json.rule, patched.json.memberCount, patched.json.syncCount],
        ['Big Buyers', 'buyers', { type: 'event', event: 'Bought', minCount: 2 }, 5, 1],
        'renamed, the trait key kept; nothing resent, nothing synced yet',
      );
      assert.equal(await sent(), 5, 'no member was resent');
      assert.deepEqual((await ferry.admin('GET', '/audiences/buyers')).json.rule, { type: 'event', event: 'Bought', minCount: 2 });

      const synced = (await ferry.admin('POST', '/audiences/buyers/sync')).json;
      assert.deepEqual([synced.added, synced.removed, synced.memberCount], [0, 2, 3]);
      const leavers = (await ferry.admin('GET', '/deliveries?type=audience&limit=1000')).json.deliveries.slice(5);
      assert.deepEqual(leavers.map((d: any) => d.userId).sort(), ['u4', 'u5']);
      for (const d of leavers) {
        const body = JSON.parse((await ferry.admin('GET', `/deliveries/${d.id}`)).json.body);
        assert.deepEqual(body.traits, { buyers: false }, 'the key receivers hold');
      }

      // Another type of rule replaces the rule whole.
      const toTrait = await ferry.admin('PATCH', '/audiences/buyers', { rule: { type: 'trait', trait: 'plan', equals: 'pro' } });
      assert.deepEqual(toTrait.json.rule, { type: 'trait', trait: 'plan', equals: 'pro' });
      const refused: [unknown, string, string][] = [
        [{ id: 'other' }, 'bad_request', 'id'],
        [{ members: [] }, 'unknown_parameter', 'members'],
        [{ rule: { withinDays: 0 } }, 'invalid_settings', 'rule.withinDays'],
        [{ destinationIds: ['ghost'] }, 'invalid_settings', 'destinationIds[0]'],
      ];
      for (const [body, code, path] of refused) {
        const res = await ferry.admin('PATCH', '/audiences/buyers', body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.deepEqual([res.json.errors[0].code, res.json.errors[0].path], [code, path], JSON.stringify(body));
      }
      assert.deepEqual(
        (await ferry.admin('GET', '/audiences/buyers')).json.rule,
        { type: 'trait', trait: 'plan', equals: 'pro' },
        'unchanged by a refused patch',
      );
      assert.equal((await ferry.admin('PATCH', '/audiences/ghost', { name: 'x' })).status, 404);
      assert.equal((await ferry.admin('PATCH', '/computed-traits/buyers', { name: 'x' })).status, 404, 'an audience is no computed trait');

      const trait = await ferry.admin('POST', '/computed-traits', {
        id: 'purchases',
        name: 'Purchases',
        destinationIds: ['hooks'],
        rule: { type: 'event_count', event: 'Bought' },
      });
      assert.equal(trait.status, 201);
      const withWindow = await ferry.admin('PATCH', '/computed-traits/purchases', { rule: { withinDays: 7 }, sourceIds: ['app'] });
      assert.deepEqual([withWindow.json.rule, withWindow.json.sourceIds], [{ type: 'event_count', event: 'Bought', withinDays: 7 }, ['app']]);
      const allSources = await ferry.admin('PATCH', '/computed-traits/purchases', { sourceIds: null, rule: { withinDays: null } });
      assert.deepEqual([allSources.json.rule, allSources.json.sourceIds], [{ type: 'event_count', event: 'Bought' }, null]);
    });

    test('members are listed in user id order, in pages', async (t) => {
      const onCleanup = cleanups(t);
      const ferry = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]), {
        store: await backend.open(onCleanup),
        deliver: false,
      });
      onCleanup(() => ferry.stop());
      const batch = ['u5', 'u3', 'u1', 'u4', 'u2', 'u1'].map((userId) => ({ type: 'track', userId, event: 'Bought' }));
      assert.equal((await ferry.send('/v1/batch', { batch })).status, 200);
      assert.equal(
        (await ferry.admin('POST', '/computed-traits', { id: 'n', name: 'N', destinationIds: ['hooks'], rule: { type: 'event_count', event: 'Bought' } }))
          .status,
        201,
      );
      const pages: unknown[][] = [];
      let query = 'limit=2';
      for (let i = 0; i < 10; i += 1) {
        const res = await ferry.admin('GET', `/computed-traits/n/members?${query}`);
        assert.equal(res.status, 200);
        pages.push(res.json.members.map((m: any) => [m.userId, m.value]));
        if (res.json.next === null) break;
        query = `limit=2&after=${res.json.next}`;
      }
      assert.deepEqual(pages, [
        [
          ['u1', 2],
          ['u2', 1],
        ],
        [
          ['u3', 1],
          ['u4', 1],
        ],
        [['u5', 1]],
      ]);
      assert.equal((await ferry.admin('GET', '/audiences/n/members')).status, 404, 'a computed trait is no audience');
      assert.equal((await ferry.admin('GET', '/computed-traits/n/members?limit=5000')).json.errors[0].path, 'limit');
      assert.equal((await ferry.admin('GET', '/computed-traits/n/members?userId=u1')).json.errors[0].code, 'unknown_parameter');
    });
  });
}
