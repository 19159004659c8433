import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { maskSecrets } from '../../src/admin/audit.js';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { adminCall, startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { stopPostgres } from '../helpers/postgres.js';

after(() => stopPostgres());

const config = () => testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]);
const iso = (ms: number) => new Date(ms).toISOString();

for (const kind of storeKinds) {
  describe(`the audit log (${kind})`, () => {
    test('what changes nothing is not an entry: a configuration plan and a replay dry run', async (t) => {
      const { server } = await startFerryOn(kind, config(), { deliver: false }, cleanups(t));
      const plan = await adminCall(server.url, adminToken, 'POST', '/config/plan', { config: { sources: [], destinations: [] } });
      assert.equal(plan.status, 200, JSON.stringify(plan.json));
      const dry = await adminCall(server.url, adminToken, 'POST', '/dead-letters/replay', { dryRun: true });
      assert.equal(dry.status, 200);
      assert.equal(dry.json.wouldReplay, 0);
      // A real replay (of nothing) is a change an operator made, and is kept.
      assert.equal((await adminCall(server.url, adminToken, 'POST', '/dead-letters/replay', {})).status, 200);
      const audit = await adminCall(server.url, adminToken, 'GET', '/audit');
      assert.deepEqual(
        audit.json.entries.map((e: { action: string }) => e.action),
        ['dead-letter.replay'],
      );
    });

    test('a destination created, patched and deleted: who, what, when, and the object before and after with its secrets masked', async (t) => {
      const clock = new ManualClock();
      const { server, rows } = await startFerryOn(kind, config(), { clock, deliver: false }, cleanups(t));
      const secrets = ['audit-shared-secret-1', 'rotated-shared-secret-2', 'Bearer header-secret-3', 'url-secret-4'];
      const created = await adminCall(server.url, adminToken, 'POST', '/destinations', {
        id: 'crm',
        type: 'Webhooks',
        sources: ['app'],
        settings: { webhooks: [{ url: `http://127.0.0.1:9/in?token=${secrets[3]}`, headers: { Authorization: secrets[2] } }], sharedSecret: secrets[0] },
      });
      assert.equal(created.status, 201);
      const createdAt = clock.now();
      clock.advance(1000);
      const patched = await adminCall(server.url, adminToken, 'PATCH', '/destinations/crm', { enabled: false, settings: { sharedSecret: secrets[1] } });
      assert.equal(patched.status, 200);
      clock.advance(1000);
      assert.equal((await adminCall(server.url, adminToken, 'DELETE', '/destinations/crm')).status, 204);
      // Reads are not changes.
      assert.equal((await adminCall(server.url, adminToken, 'GET', '/destinations')).status, 200);

      const audit = await adminCall(server.url, adminToken, 'GET', '/audit');
      assert.equal(audit.status, 200);
      assert.equal(audit.json.next, null);
      const [deleted, updated, made] = audit.json.entries;
      assert.equal(audit.json.entries.length, 3, 'newest first, one entry per change');
      const view = (enabled: boolean) => ({
        id: 'crm',
        type: 'Webhooks',
        name: 'crm',
        enabled,
        sources: ['app'],
        settings: { webhooks: [{ url: 'http://127.0.0.1:9/in?token=[redacted]', headers: { Authorization: '[redacted]' } }], hasSharedSecret: true },
      });
      assert.deepEqual(made, {
        id: made.id,
        at: iso(createdAt),
        tokenId: 'bootstrap',
        method: 'POST',
        path: '/admin/v1/destinations',
        action: 'destination.create',
        object: { kind: 'destination', id: 'crm' },
        status: 201,
        error: null,
        before: null,
        after: view(true),
      });
      assert.deepEqual(
        { ...updated, id: 0 },
        {
          id: 0,
          at: iso(createdAt + 1000),
          tokenId: 'bootstrap',
          method: 'PATCH',
          path: '/admin/v1/destinations/crm',
          action: 'destination.update',
          object: { kind: 'destination', id: 'crm' },
          status: 200,
          error: null,
          before: view(true),
          after: view(false),
        },
      );
      assert.deepEqual(
        [deleted.action, deleted.method, deleted.status, deleted.at, deleted.before, deleted.after],
        ['destination.delete', 'DELETE', 204, iso(createdAt + 2000), view(false), null],
      );
      assert.ok(deleted.id > updated.id && updated.id > made.id);

      const everything = JSON.stringify(audit.json) + JSON.stringify(await rows('SELECT * FROM audit_log'));
      for (const secret of secrets) assert.ok(!everything.includes(secret.replace('Bearer ', '')), `${secret} appears in the audit log`);
    });

    test('a token made is kept without its value; refused and failed changes are kept too, unknown and anonymous ones are not', async (t) => {
      const { server, rows } = await startFerryOn(kind, config(), { deliver: false }, cleanups(t));
      const made = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'viewer', scope: 'read' })).json;
      // A refused change of a read token, a broken destination, a revocation.
      assert.equal((await adminCall(server.url, made.token, 'PATCH', '/destinations/hooks', { enabled: false })).status, 403);
      assert.equal(
        (await adminCall(server.url, adminToken, 'POST', '/destinations', { id: 'bad', type: 'Webhooks', sources: ['ghost'], settings: {} })).status,
        400,
      );
      assert.equal((await adminCall(server.url, adminToken, 'DELETE', `/tokens/${made.id}`)).status, 204);
      // Neither an anonymous change nor an unknown path is an entry.
      assert.equal((await adminCall(server.url, undefined, 'DELETE', '/destinations/hooks')).status, 401);
      assert.equal((await adminCall(server.url, 'not-a-token-but-long-enough-to-be-one', 'DELETE', '/destinations/hooks')).status, 401);
      assert.equal((await adminCall(server.url, adminToken, 'POST', '/nothing-here', {})).status, 404);

      const entries = (await adminCall(server.url, adminToken, 'GET', '/audit')).json.entries.reverse();
      assert.deepEqual(
        entries.map((e: any) => [e.tokenId, e.action, e.status, e.error]),
        [
          ['bootstrap', 'token.create', 201, null],
          [made.id, 'destination.update', 403, 'admin_forbidden'],
          ['bootstrap', 'destination.create', 400, 'invalid_settings'],
          ['bootstrap', 'token.delete', 204, null],
        ],
      );
      const [tokenMade, refused, failed, revoked] = entries;
      assert.deepEqual(tokenMade.object, { kind: 'token', id: made.id });
      assert.deepEqual(tokenMade.after, { id: made.id, name: 'viewer', scope: 'read', createdAt: made.createdAt, lastUsedAt: null, revokedAt: null });
      assert.deepEqual([refused.object, refused.after], [{ kind: 'destination', id: 'hooks' }, null]);
      assert.deepEqual([failed.object, failed.before, failed.after], [null, null, null]);
      assert.equal(revoked.before.revokedAt, null);
      assert.match(revoked.after.revokedAt, /^\d{4}-\d\d-\d\dT/);
      const stored = JSON.stringify(await rows('SELECT * FROM audit_log'));
      assert.ok(!stored.includes(made.token), 'the token value is never kept');
      assert.ok(!stored.includes(made.token.slice(4)), 'not even without its prefix');
    });

    test('a route without a reader of its kind is kept with its answer as `after`, masked', async (t) => {
      const { server } = await startFerryOn(kind, config(), { deliver: false }, cleanups(t));
      const regulation = await adminCall(server.url, adminToken, 'POST', '/regulations', { userIds: ['u1'] });
      assert.equal(regulation.status, 202);
      assert.equal((await adminCall(server.url, adminToken, 'POST', '/dead-letters/replay', { destinationId: 'hooks' })).status, 200);
      const [replay, deletion] = (await adminCall(server.url, adminToken, 'GET', '/audit')).json.entries;
      assert.deepEqual(
        [deletion.action, deletion.object, deletion.before, deletion.after],
        ['regulation.create', { kind: 'regulation', id: regulation.json.id }, null, regulation.json],
      );
      assert.deepEqual([replay.action, replay.object, replay.after], ['dead-letter.replay', null, { replayed: 0 }]);
    });

    test('entries page newest first through `next`; a read token may read them', async (t) => {
      const { server } = await startFerryOn(kind, config(), { deliver: false }, cleanups(t));
      for (let i = 0; i < 5; i++) assert.equal((await adminCall(server.url, adminToken, 'PATCH', '/destinations/hooks', { name: `hooks ${i}` })).status, 200);
      const reader = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'reader', scope: 'read' })).json.token;
      const seen: any[] = [];
      let next: string | null = null;
      for (let page = 0; page < 10; page++) {
        const res = await adminCall(server.url, reader, 'GET', `/audit?limit=2${next ? `&after=${next}` : ''}`);
        assert.equal(res.status, 200);
        seen.push(...res.json.entries);
        next = res.json.next;
        if (next === null) break;
        assert.equal(next, String(res.json.entries.at(-1).id));
      }
      assert.equal(next, null, 'the pages end');
      assert.deepEqual(
        seen.map((e) => e.action),
        ['token.create', ...Array(5).fill('destination.update')],
      );
      assert.deepEqual(
        seen.slice(1).map((e) => e.after.name),
        ['hooks 4', 'hooks 3', 'hooks 2', 'hooks 1', 'hooks 0'],
      );
      const ids = seen.map((e) => e.id);
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => b - a),
      );
      for (const [query, code, path] of [
        ['?after=x', 'bad_request', 'after'],
        ['?limit=0', 'bad_request', 'limit'],
        ['?before=1', 'unknown_parameter', 'before'],
      ]) {
        const res = await adminCall(server.url, adminToken, 'GET', `/audit${query}`);
        assert.deepEqual([res.status, res.json.errors[0].code, res.json.errors[0].path], [400, code, path], query);
      }
    });
  });
}

test('maskSecrets hides every string under a secret-looking key, at any depth, and every header value', () => {
  const masked = maskSecrets({
    id: 'd',
    tokenId: 'tok_1',
    hasSharedSecret: true,
    token: 'fat_x',
    settings: { sharedSecret: 's', standardWebhooks: { secrets: ['whsec_a', 'whsec_b'] }, credentials: { user: 'u', pass: 'p' } },
    headers: { 'X-Custom': 'v' },
    writeKey: 'wk',
    list: [{ password: 'pw', name: 'n' }],
  });
  assert.deepEqual(masked, {
    id: 'd',
    tokenId: 'tok_1',
    hasSharedSecret: true,
    token: '[redacted]',
    settings: {
      sharedSecret: '[redacted]',
      standardWebhooks: { secrets: ['[redacted]', '[redacted]'] },
      credentials: { user: '[redacted]', pass: '[redacted]' },
    },
    headers: { 'X-Custom': '[redacted]' },
    writeKey: '[redacted]',
    list: [{ password: '[redacted]', name: 'n' }],
  });
});
