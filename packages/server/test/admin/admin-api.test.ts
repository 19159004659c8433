import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createFerry } from '../../src/app.js';
import { adminToken, startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';

describe('the admin API refuses what it does not define', () => {
  let t: TestFerry;
  before(async () => {
    // No worker: the delivery stays pending, and nothing is sent anywhere.
    t = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]), { deliver: false });
    assert.equal((await t.send('/v1/track', { userId: 'u1', event: 'E', messageId: 'm-1' })).status, 200);
  });
  after(() => t.stop());

  const get = async (path: string, authorization?: string) => {
    const res = await fetch(t.url + path, { headers: authorization ? { authorization } : {} });
    return { status: res.status, json: (await res.json()) as any };
  };
  const bearer = `Bearer ${adminToken}`;

  test('everything under /admin asks for the token before anything else: 401 before 404', async () => {
    const unknown = [
      '/admin',
      '/admin/',
      '/admin/v1',
      '/admin/v1/',
      '/admin/v1/nope',
      '/admin/v2/sources',
      '/admin/v1/sources/app/extra',
      '/admin/anything?x=1',
    ];
    for (const path of unknown) {
      const anonymous = await get(path);
      assert.equal(anonymous.status, 401, `${path} without a token`);
      assert.equal(anonymous.json.errors[0].code, 'admin_unauthorized');
      assert.equal((await get(path, 'Bearer wrong-token-but-long-enough-to-pass-32')).status, 401, `${path} with a wrong token`);
      const withToken = await get(path, bearer);
      assert.equal(withToken.status, 404, `${path} with the token`);
      assert.equal(withToken.json.errors[0].code, 'not_found');
    }
    // A known path with another method is as unknown as any other path.
    const res = await fetch(`${t.url}/admin/v1/stats`, { method: 'DELETE' });
    assert.equal(res.status, 401);
    assert.equal((await get('/admin/v1/stats')).status, 401);
  });

  test('a wrong token of any length is a 401: the hashes of both are compared, in constant time', async () => {
    for (const length of [1, 31, 32, 33, 4096]) {
      const res = await get('/admin/v1/stats', `Bearer ${'x'.repeat(length)}`);
      assert.equal(res.status, 401, `a token of ${length} characters`);
    }
    assert.equal((await get('/admin/v1/stats', `Basic ${Buffer.from(`${adminToken}:`).toString('base64')}`)).status, 401);
    assert.equal((await get('/admin/v1/stats', bearer)).status, 200);
  });

  test('an unknown query parameter is refused with 400 unknown_parameter naming it, on every admin route', async () => {
    const cases: [string, string[]][] = [
      ['/deliveries?user_id=u1', ['user_id']],
      ['/deliveries?status=pending&userId=u1&foo=1&receivedSince=x', ['foo', 'receivedSince']],
      ['/dead-letters?eventName=E', ['eventName']],
      ['/dead-letters?status=pending', ['status']],
      ['/rejections?status=dead', ['status']],
      ['/sources?limit=5', ['limit']],
      ['/sources/app?verbose=1', ['verbose']],
      ['/destinations?enabled=true', ['enabled']],
      ['/destinations/hooks?x=1', ['x']],
      ['/deliveries/1?withBody=0', ['withBody']],
      ['/stats?since=2026-01-01', ['since']],
      ['/regulations/reg_x?x=1', ['x']],
      ['/audiences?limit=1', ['limit']],
      ['/computed-traits?limit=1', ['limit']],
    ];
    for (const [path, names] of cases) {
      const res = await get('/admin/v1' + path, bearer);
      assert.equal(res.status, 400, path);
      const error = res.json.errors[0];
      assert.equal(error.code, 'unknown_parameter', path);
      assert.equal(error.path, names[0], path);
      for (const name of names) assert.match(error.message, new RegExp(`"${name}"`), path);
    }
    const known = await get('/admin/v1/deliveries?status=pending&destinationId=hooks&sourceId=app&messageId=m-1&limit=10&after=0', bearer);
    assert.equal(known.status, 200);
    assert.deepEqual(
      known.json.deliveries.map((d: any) => d.messageId),
      ['m-1'],
    );
  });

  test('an unknown destinationId or sourceId in a filter is a 404, not an empty list', async () => {
    const cases: [string, string][] = [
      ['/deliveries?destinationId=ghost', 'destinationId'],
      ['/deliveries?sourceId=ghost', 'sourceId'],
      ['/dead-letters?destinationId=ghost', 'destinationId'],
      ['/dead-letters?sourceId=ghost', 'sourceId'],
      ['/rejections?sourceId=ghost', 'sourceId'],
    ];
    for (const [path, name] of cases) {
      const res = await get('/admin/v1' + path, bearer);
      assert.equal(res.status, 404, path);
      assert.equal(res.json.errors[0].code, 'not_found', path);
      assert.equal(res.json.errors[0].path, name, path);
    }
    const replay = await t.admin('POST', '/dead-letters/replay', { destinationId: 'ghost' });
    assert.equal(replay.status, 404);
    assert.equal(replay.json.errors[0].path, 'destinationId');
    // A known id that matches nothing is still an empty answer.
    assert.deepEqual((await get('/admin/v1/deliveries?sourceId=other', bearer)).json.deliveries, []);
    assert.equal((await get('/admin/v1/rejections?sourceId=app', bearer)).status, 200);
  });

  test('unknown body keys are refused with unknown_parameter; nothing is carried out', async () => {
    const regulation = await t.admin('POST', '/regulations', { userIds: ['u1'], sourceId: ['app'] });
    assert.equal(regulation.status, 400);
    assert.equal(regulation.json.errors[0].code, 'unknown_parameter');
    assert.equal(regulation.json.errors[0].path, 'sourceId');
    const replay = await t.admin('POST', '/dead-letters/replay', { destinationIds: ['hooks'] });
    assert.equal(replay.status, 400);
    assert.equal(replay.json.errors[0].code, 'unknown_parameter');
    assert.equal((await t.admin('GET', '/deliveries?messageId=m-1')).json.deliveries.length, 1, 'the event was not deleted');
  });
});

describe('PATCH /destinations/{id} is a JSON merge patch (RFC 7396)', () => {
  let t: TestFerry;
  const full = {
    id: 'crm',
    type: 'Webhooks',
    name: 'CRM',
    sources: ['app'],
    settings: { webhooks: [{ url: 'https://a.example.com/hook', headers: { Authorization: 'Bearer s3cr3t' } }], sharedSecret: 'whsec-1' },
  };
  before(async () => {
    t = await startFerry(testConfig([]), { deliver: false });
  });
  after(() => t.stop());
  const stored = () => t.ferry.catalog.destination('crm')!;
  const patch = async (body: unknown, contentType = 'application/json') => {
    const res = await fetch(`${t.url}/admin/v1/destinations/crm`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': contentType },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as any };
  };

  test('a key left out stays; objects merge at every depth; null removes; lists replace', async () => {
    assert.equal((await t.admin('PUT', '/destinations/crm', full)).status, 200);

    assert.equal((await patch({ enabled: false })).status, 200);
    assert.deepEqual({ ...stored(), enabled: true }, { ...full, enabled: true }, 'nothing but enabled changed');
    assert.equal(stored().enabled, false);

    // settings merge: the secret, which answers never show, stays when only the URLs change.
    const urls = await patch({ settings: { webhooks: [{ url: 'https://b.example.com/hook' }] } });
    assert.equal(urls.status, 200);
    assert.equal(urls.json.settings.hasSharedSecret, true);
    assert.deepEqual(
      stored().settings,
      { webhooks: [{ url: 'https://b.example.com/hook', headers: {} }], sharedSecret: 'whsec-1' },
      'the list replaced the old one whole',
    );

    const unsigned = await patch({ settings: { sharedSecret: null } }, 'application/merge-patch+json');
    assert.equal(unsigned.status, 200);
    assert.equal(unsigned.json.settings.hasSharedSecret, false);
    assert.equal(stored().settings.sharedSecret, undefined);

    assert.equal((await patch({ name: null })).json.name, 'crm', 'a removed name falls back to the id');
  });

  test("a patch merges into what is stored, not into a node's stale copy (another node disabled it meanwhile)", async () => {
    assert.equal((await t.admin('PUT', '/destinations/crm', full)).status, 200);
    // Another node's write, straight to the shared store: this node's catalogue has not seen it.
    await t.ferry.store.saveDestination({ ...stored(), enabled: false });
    assert.equal(stored().enabled, true, 'this node still holds the old copy');
    const renamed = await patch({ name: 'CRM hooks' });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.json.enabled, false, 'the disable made elsewhere stands');
    assert.equal((await t.ferry.store.loadCatalog()).destinations.find((d) => d.id === 'crm')!.enabled, false);
  });

  test('a patch whose result breaks a rule changes nothing', async () => {
    assert.equal((await t.admin('PUT', '/destinations/crm', full)).status, 200);
    for (const body of [{ settings: null }, { enabeld: false }, { settings: { webhooks: [] } }, { sources: ['ghost'] }]) {
      const res = await patch(body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.json.errors[0].code, 'invalid_settings', JSON.stringify(body));
    }
    assert.deepEqual(stored(), { ...full, enabled: true });
    assert.equal((await patch([{ op: 'remove', path: '/name' }])).json.errors[0].code, 'bad_request', 'a JSON Patch (RFC 6902) list is not a merge patch');
  });
});

describe('hostile admin bodies', () => {
  let t: TestFerry;
  before(async () => {
    t = await startFerry(testConfig([webhooksDestination('hooks', ['https://a.example.com/hook'])]), { deliver: false });
  });
  after(() => t.stop());
  const raw = async (method: string, path: string, body: string, contentType = 'application/json') => {
    const res = await fetch(`${t.url}/admin/v1${path}`, { method, headers: { authorization: `Bearer ${adminToken}`, 'content-type': contentType }, body });
    return { status: res.status, json: (await res.json()) as any };
  };

  test('a __proto__ or constructor.prototype key is refused before it reaches a route; nothing changes', async () => {
    const before = t.ferry.catalog.destination('hooks');
    for (const [method, path, contentType] of [
      ['PATCH', '/destinations/hooks', 'application/json'],
      ['PATCH', '/destinations/hooks', 'application/merge-patch+json'],
      ['POST', '/regulations', 'application/json'],
    ] as const) {
      for (const body of ['{"__proto__":{"enabled":false}}', '{"constructor":{"prototype":{"enabled":false}}}']) {
        const res = await raw(method, path, body, contentType);
        assert.equal(res.status, 400, `${method} ${path} ${body}`);
        assert.ok(['bad_request', 'invalid_json'].includes(res.json.errors[0].code), res.json.errors[0].code);
      }
    }
    assert.deepEqual(t.ferry.catalog.destination('hooks'), before);
    assert.equal(({} as { enabled?: unknown }).enabled, undefined, 'no prototype was touched');
  });

  test("${VAR} in an admin body is kept as text: the server's environment cannot be read back", async () => {
    const res = await t.admin('PATCH', '/destinations/hooks', {
      settings: { webhooks: [{ url: 'https://a.example.com/hook', headers: { 'X-Token': '${FERRY_ADMIN_TOKEN}' } }] },
    });
    assert.equal(res.status, 200);
    assert.equal(t.ferry.catalog.destination('hooks')!.settings.webhooks[0]!.headers['X-Token'], '${FERRY_ADMIN_TOKEN}');
  });
});

describe('the admin token', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-token-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));
  const start = (token: string) => createFerry({ config: testConfig([]), dataDir, adminToken: token, logger: pino({ level: 'silent' }) });

  test('one shorter than 32 characters is refused at start, saying how to make one, without repeating it', async () => {
    for (const token of ['a', 'short-token-xyz', 'x'.repeat(31), '   ', ` ${'y'.repeat(31)} `]) {
      await assert.rejects(start(token), (error: Error) => {
        assert.match(error.message, /at least 32 characters/);
        assert.match(error.message, /openssl rand -hex 32/);
        if (token.trim().length > 3) assert.ok(!error.message.includes(token.trim()), 'the token is not repeated');
        return true;
      });
    }
    const ferry = await start('z'.repeat(32));
    await ferry.stop();
  });
});
