/**
 * POST /admin/v1/audiences/preview and /computed-traits/preview: how many users a definition
 * would hold now, counted as a sync counts them, with nothing stored.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { adminCall, startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { stopPostgres } from '../helpers/postgres.js';

after(() => stopPostgres());

const dayMs = 86_400_000;
const identify = (userId: string, plan: string) => ({ type: 'identify', userId, traits: { plan } });
const track = (userId: string, event: string) => ({ type: 'track', userId, event });
const audience = (rule: unknown, more: Record<string, unknown> = {}) => ({ id: 'preview', name: 'Preview', destinationIds: ['hooks'], rule, ...more });

for (const kind of storeKinds) {
  describe(`audience and computed-trait previews (${kind})`, () => {
    test('count the users a definition holds now, as the sync that a create runs counts its members, storing nothing', async (t) => {
      const clock = new ManualClock();
      const config = testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/'], { sources: [] })], { audiences: { syncIntervalMs: dayMs } });
      const { server, rows } = await startFerryOn(kind, config, { clock, deliver: false }, cleanups(t));
      const ingest = async (batch: unknown[], writeKey?: string) =>
        assert.equal((await server.send('/v1/batch', { batch }, writeKey ? { writeKey } : {})).status, 200);
      await ingest([identify('u1', 'pro'), identify('u2', 'free'), identify('u3', 'pro'), track('u1', 'Order'), track('u1', 'Order'), track('u2', 'Order')]);
      await ingest([track('u5', 'Order')], 'other-write-key');
      clock.advance(2 * dayMs);
      await ingest([track('u6', 'Order'), identify('u3', 'free')]);

      const preview = async (path: string, body: unknown, token = adminToken) => {
        const res = await adminCall(server.url, token, 'POST', path, body);
        assert.equal(res.status, 200, JSON.stringify(res.json));
        return res.json;
      };
      assert.deepEqual(await preview('/audiences/preview', audience({ type: 'trait', trait: 'plan', equals: 'pro' })), { members: 1 }, 'u3 is free now');
      assert.deepEqual(await preview('/audiences/preview', audience({ type: 'event', event: 'Order', minCount: 2 })), { members: 1 });
      assert.deepEqual(await preview('/audiences/preview', audience({ type: 'event', event: 'Order', minCount: 1 })), { members: 4 });
      assert.deepEqual(await preview('/audiences/preview', audience({ type: 'event', event: 'Order', minCount: 1, withinDays: 1 })), { members: 1 });
      assert.deepEqual(await preview('/audiences/preview', audience({ type: 'event', event: 'Order', minCount: 1 }, { sourceIds: ['other'] })), { members: 1 });
      assert.deepEqual(await preview('/computed-traits/preview', audience({ type: 'event_count', event: 'Order' })), { profiles: 4 });
      assert.deepEqual(await preview('/computed-traits/preview', audience({ type: 'event_count', event: 'Order' }, { sourceIds: ['app'] })), { profiles: 3 });
      assert.deepEqual(await preview('/computed-traits/preview', audience({ type: 'event_count', event: 'Nothing' })), { profiles: 0 });

      const read = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'viewer', scope: 'read' })).json.token;
      assert.deepEqual(
        await preview('/audiences/preview', audience({ type: 'event', event: 'Order', minCount: 2 }), read),
        { members: 1 },
        'a read token may preview',
      );
      assert.equal((await adminCall(server.url, read, 'POST', '/audiences', audience({ type: 'event', event: 'Order', minCount: 2 }))).status, 403);

      assert.deepEqual(await rows('SELECT id FROM audiences'), [], 'nothing stored');
      assert.deepEqual(await rows('SELECT audience_id FROM audience_members'), []);
      assert.deepEqual(
        (await rows('SELECT path FROM audit_log')).map((r) => r['path']),
        ['/admin/v1/tokens', '/admin/v1/audiences'],
        'a preview is not audited (the create a read token was refused is)',
      );

      const created = await adminCall(server.url, adminToken, 'POST', '/audiences', audience({ type: 'event', event: 'Order', minCount: 1 }));
      assert.equal(created.status, 201);
      assert.equal(created.json.memberCount, 4, 'the create finds what the preview said');
    });

    test('a definition is validated as a create validates it: the same 400 errors with their paths', async (t) => {
      const { server } = await startFerryOn(
        kind,
        testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/'], { sources: [] })]),
        { deliver: false },
        cleanups(t),
      );
      const cases: [string, unknown, string, string | undefined][] = [
        ['/audiences/preview', audience({ type: 'event', event: 'x', minCount: 0 }), 'invalid_settings', 'rule.minCount'],
        ['/audiences/preview', audience({ type: 'event_count', event: 'x' }), 'invalid_settings', 'rule.type'],
        ['/audiences/preview', audience({ type: 'event', event: 'x', minCount: 1 }, { sourceIds: ['nope'] }), 'invalid_settings', 'sourceIds[0]'],
        ['/computed-traits/preview', audience({ type: 'event', event: 'x', minCount: 1 }), 'invalid_settings', 'rule.type'],
        ['/computed-traits/preview', [], 'bad_request', undefined],
      ];
      for (const [path, body, code, field] of cases) {
        const preview = await adminCall(server.url, adminToken, 'POST', path, body);
        const create = await adminCall(server.url, adminToken, 'POST', path.replace('/preview', ''), body);
        assert.equal(preview.status, 400, `${path} ${JSON.stringify(body)}`);
        assert.deepEqual(preview.json, create.json, `${path}: the same answer as a create`);
        assert.equal(preview.json.errors[0].code, code);
        assert.equal(preview.json.errors[0].path, field);
      }
    });
  });
}
