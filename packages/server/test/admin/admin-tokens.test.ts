import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { createFerry } from '../../src/app.js';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { adminCall, startFerryOn, storeKinds } from '../helpers/ferry-on-store.js';
import { stopPostgres } from '../helpers/postgres.js';

after(() => stopPostgres());

const config = () => testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]);
const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

for (const kind of storeKinds) {
  describe(`admin tokens (${kind})`, () => {
    test('a token is shown once, listed without its value or hash, and stored as its SHA-256 only', async (t) => {
      const clock = new ManualClock();
      const { server, rows } = await startFerryOn(kind, config(), { clock, deliver: false }, cleanups(t));
      const created = await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'dashboard', scope: 'read' });
      assert.equal(created.status, 201);
      const { token: value, ...view } = created.json;
      assert.match(value, /^fat_[A-Za-z0-9_-]{43}$/);
      assert.match(view.id, /^tok_[0-9a-f]{16}$/);
      assert.deepEqual(view, {
        id: view.id,
        name: 'dashboard',
        scope: 'read',
        createdAt: new Date(clock.now()).toISOString(),
        lastUsedAt: null,
        revokedAt: null,
      });

      const listed = await adminCall(server.url, adminToken, 'GET', '/tokens');
      assert.equal(listed.status, 200);
      assert.deepEqual(listed.json, { tokens: [view] });

      const stored = await rows('SELECT * FROM admin_tokens');
      assert.equal(stored.length, 1);
      assert.equal(stored[0]!['token_sha256'], sha256Hex(value));
      assert.ok(!JSON.stringify(stored).includes(value), 'the value itself is nowhere in the row');
      assert.ok(!JSON.stringify(listed.json).includes(stored[0]!['token_sha256'] as string), 'the hash is never shown');

      clock.advance(1);
      const second = await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'ci', scope: 'admin' });
      assert.notEqual(second.json.token, value);
      assert.deepEqual(
        (await adminCall(server.url, adminToken, 'GET', '/tokens')).json.tokens.map((t: any) => t.name),
        ['dashboard', 'ci'],
      );
    });

    test('a read token reads and is refused every change with 403 admin_forbidden; an admin token may do everything', async (t) => {
      const { server } = await startFerryOn(kind, config(), { deliver: false }, cleanups(t));
      const read = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'viewer', scope: 'read' })).json;
      const admin = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'operator', scope: 'admin' })).json;

      for (const path of ['/destinations', '/sources/app', '/stats', '/deliveries', '/audit'])
        assert.equal((await adminCall(server.url, read.token, 'GET', path)).status, 200, `GET ${path}`);
      const changes: [string, string, unknown?][] = [
        ['POST', '/sources', { id: 'web', writeKey: 'web-write-key-0123456789' }],
        ['PATCH', '/destinations/hooks', { enabled: false }],
        ['PUT', '/destinations/hooks', webhooksDestination('hooks', ['http://127.0.0.1:9/other'])],
        ['DELETE', '/destinations/hooks'],
        ['POST', '/dead-letters/replay', {}],
        ['POST', '/regulations', { userIds: ['u1'] }],
        ['POST', '/tokens', { name: 'escalate', scope: 'admin' }],
        ['DELETE', `/tokens/${admin.id}`],
      ];
      for (const [method, path, body] of changes) {
        const res = await adminCall(server.url, read.token, method, path, body);
        assert.equal(res.status, 403, `${method} ${path}`);
        assert.equal(res.json.errors[0].code, 'admin_forbidden', `${method} ${path}`);
      }
      // Who else holds access is not for a read token to see.
      assert.equal((await adminCall(server.url, read.token, 'GET', '/tokens')).status, 403);
      const destination = await adminCall(server.url, adminToken, 'GET', '/destinations/hooks');
      assert.equal(destination.json.enabled, true, 'nothing was changed');
      assert.equal((await adminCall(server.url, adminToken, 'GET', '/sources/web')).status, 404);

      assert.equal((await adminCall(server.url, admin.token, 'PATCH', '/destinations/hooks', { enabled: false })).json.enabled, false);
      const made = await adminCall(server.url, admin.token, 'POST', '/tokens', { name: 'made-by-operator', scope: 'read' });
      assert.equal(made.status, 201);
      assert.equal((await adminCall(server.url, admin.token, 'GET', '/tokens')).json.tokens.length, 3);
      // A wrong token stays a 401, whatever it looks like.
      assert.equal((await adminCall(server.url, `${admin.token}x`, 'GET', '/stats')).status, 401);
    });

    test('a revoked token is refused at once with 401; the bootstrap token keeps working and cannot be revoked', async (t) => {
      const clock = new ManualClock();
      const { server } = await startFerryOn(kind, config(), { clock, deliver: false }, cleanups(t));
      const made = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'leaked', scope: 'admin' })).json;
      assert.equal((await adminCall(server.url, made.token, 'GET', '/stats')).status, 200);

      clock.advance(1000);
      assert.equal((await adminCall(server.url, adminToken, 'DELETE', `/tokens/${made.id}`)).status, 204);
      const refused = await adminCall(server.url, made.token, 'GET', '/stats');
      assert.equal(refused.status, 401);
      assert.equal(refused.json.errors[0].code, 'admin_unauthorized');
      const revokedAt = new Date(clock.now()).toISOString();
      clock.advance(1000);
      assert.equal((await adminCall(server.url, adminToken, 'DELETE', `/tokens/${made.id}`)).status, 204, 'revoking again changes nothing');
      const [listed] = (await adminCall(server.url, adminToken, 'GET', '/tokens')).json.tokens;
      assert.equal(listed.revokedAt, revokedAt, 'the first revocation time is kept');

      assert.equal((await adminCall(server.url, adminToken, 'DELETE', '/tokens/tok_0000000000000000')).status, 404);
      const bootstrap = await adminCall(server.url, adminToken, 'DELETE', '/tokens/bootstrap');
      assert.equal(bootstrap.status, 409);
      assert.match(bootstrap.json.errors[0].message, /FERRY_ADMIN_TOKEN/);
      assert.equal((await adminCall(server.url, adminToken, 'GET', '/stats')).status, 200);
    });

    test('a token body is checked: name and scope, nothing else', async (t) => {
      const { server } = await startFerryOn(kind, config(), { deliver: false }, cleanups(t));
      const cases: [unknown, number, string, string][] = [
        [{ name: 'x', scope: 'write' }, 400, 'bad_request', 'scope'],
        [{ name: 'x' }, 400, 'bad_request', 'scope'],
        [{ scope: 'read' }, 400, 'bad_request', 'name'],
        [{ name: '  ', scope: 'read' }, 400, 'bad_request', 'name'],
        [{ name: 'x'.repeat(101), scope: 'read' }, 400, 'bad_request', 'name'],
        [{ name: 'x', scope: 'read', expiresAt: '2030-01-01' }, 400, 'unknown_parameter', 'expiresAt'],
      ];
      for (const [body, status, code, path] of cases) {
        const res = await adminCall(server.url, adminToken, 'POST', '/tokens', body);
        assert.deepEqual([res.status, res.json.errors[0].code, res.json.errors[0].path], [status, code, path], JSON.stringify(body));
      }
      assert.equal((await adminCall(server.url, adminToken, 'POST', '/tokens', [])).status, 400);
      assert.deepEqual((await adminCall(server.url, adminToken, 'GET', '/tokens')).json.tokens, []);
    });

    test('a use is recorded as lastUsedAt at most once a minute', async (t) => {
      const clock = new ManualClock();
      const { server, rows } = await startFerryOn(kind, config(), { clock, deliver: false }, cleanups(t));
      const made = (await adminCall(server.url, adminToken, 'POST', '/tokens', { name: 'poller', scope: 'read' })).json;
      const lastUsed = async () => (await adminCall(server.url, adminToken, 'GET', '/tokens')).json.tokens[0].lastUsedAt;
      const firstUse = new Date(clock.now()).toISOString();
      assert.equal((await adminCall(server.url, made.token, 'GET', '/stats')).status, 200);
      assert.equal(await lastUsed(), firstUse);
      clock.advance(59_999);
      for (let i = 0; i < 5; i++) assert.equal((await adminCall(server.url, made.token, 'GET', '/stats')).status, 200);
      assert.equal(await lastUsed(), firstUse, 'not written again within the minute');
      clock.advance(1);
      assert.equal((await adminCall(server.url, made.token, 'GET', '/stats')).status, 200);
      assert.equal(await lastUsed(), new Date(clock.now()).toISOString());
      assert.equal(Number((await rows('SELECT last_used_at FROM admin_tokens'))[0]!['last_used_at']), clock.now());
    });
  });
}

describe('admin tokens on a cluster (postgres)', () => {
  test('a token revoked on one node is refused by another within its token cache time', async (t) => {
    const onCleanup = cleanups(t);
    const clock = new ManualClock();
    const tokenCacheMs = 2000;
    const first = await startFerryOn('postgres', config(), { clock, deliver: false, tokenCacheMs }, onCleanup);
    const second = await createFerry({
      config: config(),
      store: await first.openSameStore!(),
      adminToken,
      logger: pino({ level: 'silent' }),
      clock,
      deliver: false,
      tokenCacheMs,
    });
    onCleanup(() => second.stop());
    const secondUrl = await second.start(0, '127.0.0.1');

    const made = (await adminCall(first.server.url, adminToken, 'POST', '/tokens', { name: 'shared', scope: 'admin' })).json;
    assert.equal((await adminCall(secondUrl, made.token, 'GET', '/stats')).status, 200, 'a token made on one node works on the other');

    assert.equal((await adminCall(first.server.url, adminToken, 'DELETE', `/tokens/${made.id}`)).status, 204);
    assert.equal((await adminCall(first.server.url, made.token, 'GET', '/stats')).status, 401, 'refused at once where it was revoked');
    clock.advance(tokenCacheMs - 1);
    assert.equal((await adminCall(secondUrl, made.token, 'GET', '/stats')).status, 200, 'the other node still trusts its cached lookup');
    clock.advance(1);
    assert.equal((await adminCall(secondUrl, made.token, 'GET', '/stats')).status, 401, 'and refuses it once the cache time has passed');
    assert.equal((await adminCall(secondUrl, adminToken, 'GET', '/stats')).status, 200, 'the bootstrap token works on every node');
  });
});
