import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { spawnFerry } from '../helpers/spawn-ferry.js';
import { startReceiver } from '../helpers/receiver.js';
import { within } from '../helpers/within.js';

const dir = mkdtempSync(join(tmpdir(), 'ferry-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function configFile(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

describe('ferry serve', () => {
  test('a config file that breaks rules stops start-up with one line per rule: the file, the path and the rule', async () => {
    const urls =
      Array.from({ length: 6 }, (_, i) => `        - url: https://hooks.example.com/${i}`).join('\n') +
      `\n          headers: { ${Array.from({ length: 6 }, (_, i) => `X-H${i}: v${i}`).join(', ')} }`;
    const path = configFile(
      'six-urls.yaml',
      `sources:\n  - id: app\n    name: App\n    writeKey: k\ndestinations:\n  - id: d\n    type: Webhooks\n    name: D\n    sources: [app]\n    settings:\n      webhooks:\n${urls}\n`,
    );
    const ferry = spawnFerry(['serve', '--config', path, '--data', join(dir, 'bad-data'), '--port', '0']);
    const { code } = await ferry.waitForExit();
    assert.equal(code, 1);
    assert.match(ferry.output(), /six-urls\.yaml/);
    assert.match(ferry.output(), /^ferry: invalid configuration: \S*six-urls\.yaml: /m);
    assert.match(ferry.output(), /^\S*six-urls\.yaml: destinations\[0\]\.settings\.webhooks: at most 5 webhook URLs \(got 6\)$/m);
    assert.match(ferry.output(), /six-urls\.yaml: destinations\[0\]\.settings\.webhooks\[5\]\.headers: at most 5 headers per webhook \(got 6\)$/m);
  });

  test('an unknown source and a header with CR/LF are refused the same way', async () => {
    const path = configFile(
      'bad-refs.json',
      JSON.stringify({
        sources: [{ id: 'app', name: 'App', writeKey: 'k' }],
        destinations: [
          {
            id: 'd',
            type: 'Webhooks',
            name: 'D',
            sources: ['ghost'],
            settings: { webhooks: [{ url: 'https://x.example.com', headers: { 'X-A': 'a\r\nb' } }] },
          },
        ],
      }),
    );
    const ferry = spawnFerry(['serve', '--config', path, '--data', join(dir, 'bad-data2'), '--port', '0']);
    assert.equal((await ferry.waitForExit()).code, 1);
    assert.match(ferry.output(), /bad-refs\.json/);
    assert.match(ferry.output(), /unknown source "ghost"/);
    assert.match(ferry.output(), /headers/);
  });

  test('serves on the given port and data directory, with the environment of DESIGN.md; secrets stay out of the logs', async () => {
    const receiver = await startReceiver({ status: 500 });
    after(() => receiver.close());
    const path = configFile(
      'ok.yaml',
      `sources:\n  - id: app\n    name: App\n    writeKey: \${APP_KEY}\ndestinations:\n  - id: d\n    type: Webhooks\n    name: D\n    sources: [app]\n    settings:\n      webhooks:\n        - url: ${receiver.url}/x\n      sharedSecret: \${HOOK_SECRET}\n`,
    );
    const ferry = spawnFerry(['serve', '--data', join(dir, 'ok-data'), '--host', '127.0.0.1'], {
      FERRY_CONFIG: path,
      PORT: '0',
      APP_KEY: 'super-secret-write-key',
      HOOK_SECRET: 'super-secret-hmac',
      FERRY_ALLOW_PRIVATE_NETWORKS: '1',
      FERRY_LOG_LEVEL: 'debug',
      FERRY_ADMIN_TOKEN: 'cli-admin-token-of-32-characters',
    });
    after(() => void ferry.child.kill('SIGKILL'));
    const [, base] = await ferry.waitForOutput(/listening on (http:\/\/\S+)/);
    assert.match(ferry.output(), /ok-data/);
    const health = await fetch(`${base}/health`);
    assert.deepEqual(((await health.json()) as any).status, 'ok');
    // One process per SQLite data directory: a second one stops at start and says why.
    const second = spawnFerry(['serve', '--data', join(dir, 'ok-data'), '--host', '127.0.0.1'], {
      FERRY_CONFIG: path,
      PORT: '0',
      APP_KEY: 'k',
      HOOK_SECRET: 's',
      FERRY_ADMIN_TOKEN: 'cli-admin-token-of-32-characters',
    });
    assert.equal((await second.waitForExit()).code, 1);
    assert.match(second.output(), /ferry: .*ferry\.db is in use by another Ferry process/);
    const res = await fetch(`${base}/v1/track`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Basic ' + Buffer.from('super-secret-write-key:').toString('base64') },
      body: JSON.stringify({ userId: 'u', event: 'E' }),
    });
    assert.equal(res.status, 200);
    const [got] = await receiver.waitFor(1);
    assert.equal(got!.headers['x-signature'], createHmac('sha1', 'super-secret-hmac').update(got!.body).digest('hex'));
    // A failed attempt is logged; neither secret may appear anywhere in the output.
    await ferry.waitForOutput(/delivery will be retried/);
    const admin = await fetch(`${base}/admin/v1/destinations/d`, { headers: { authorization: 'Bearer cli-admin-token-of-32-characters' } });
    const adminText = await admin.text();
    ferry.child.kill('SIGTERM');
    assert.equal((await ferry.waitForExit()).code, 0);
    for (const secret of ['super-secret-write-key', 'super-secret-hmac']) {
      assert.ok(!ferry.output().includes(secret), `${secret} leaked into the logs`);
      assert.ok(!adminText.includes(secret), `${secret} leaked into the admin API`);
    }
  });
});

describe('ferry serve refuses to start unsafely', () => {
  test('the demo configuration (the default file) on every interface: refused, saying what to do; nothing listens', async () => {
    const ferry = spawnFerry(['serve', '--data', join(dir, 'demo-public'), '--port', '0'], { HOST: '', FERRY_CONFIG: '' });
    assert.equal((await ferry.waitForExit()).code, 1);
    assert.match(ferry.output(), /ferry: refusing to listen on 0\.0\.0\.0: source "demo" uses the demo configuration's write key, which is public/);
    assert.match(ferry.output(), /FERRY_DEMO_WRITE_KEY/);
    assert.match(ferry.output(), /--host 127\.0\.0\.1/);
    assert.doesNotMatch(ferry.output(), /listening on/);
  });

  test('a start refused by the demo-key guard stores no admin token: the next start on loopback generates one and prints it', async () => {
    const dataDir = join(dir, 'demo-then-loopback');
    const env = { HOST: '', FERRY_CONFIG: '', FERRY_ADMIN_TOKEN: '' };
    const refused = spawnFerry(['serve', '--data', dataDir, '--port', '0'], env);
    assert.equal((await refused.exited).code, 1);
    assert.match(refused.output(), /refusing to listen on 0\.0\.0\.0/);
    const ferry = spawnFerry(['serve', '--data', dataDir, '--port', '0', '--host', '127.0.0.1'], env);
    after(async () => {
      ferry.child.kill('SIGKILL');
      await ferry.exited;
    });
    const [, token] = await within(30_000, 'the generated admin token', ferry.waitForOutput(/admin token \(shown once[^)]*\): (\S+)/));
    const [, base] = /listening on (http:\/\/\S+)/.exec(ferry.output())!;
    const res = await fetch(`${base}/admin/v1/sources`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
    assert.equal(res.status, 200, 'the printed token opens the admin API');
    await res.text();
  });

  test('a source holding the demo key in the store, though not in the file, is refused too', async () => {
    const dataDir = join(dir, 'demo-stored');
    const store = new SqliteStore({ path: join(dataDir, 'ferry.db') });
    await store.saveSource({ id: 'old-demo', name: 'Old demo', writeKey: 'demo-write-key' });
    await store.close();
    const path = configFile('own-key.json', JSON.stringify({ sources: [{ id: 'app', writeKey: 'own-key-0123456789' }] }));
    const ferry = spawnFerry(['serve', '--config', path, '--data', dataDir, '--port', '0', '--host', '::']);
    assert.equal((await ferry.waitForExit()).code, 1);
    assert.match(ferry.output(), /refusing to listen on ::: source "old-demo" uses the demo configuration's write key/);
  });

  test('an admin token shorter than 32 characters, or a bad drain time, stops start-up with what to do', async () => {
    const path = configFile('token.json', JSON.stringify({ sources: [] }));
    const weak = spawnFerry(['serve', '--config', path, '--data', join(dir, 'weak-token'), '--port', '0', '--host', '127.0.0.1'], {
      FERRY_ADMIN_TOKEN: 'abc123',
    });
    assert.equal((await weak.waitForExit()).code, 1);
    assert.match(
      weak.output(),
      /ferry: the admin token \(FERRY_ADMIN_TOKEN\) must be at least 32 characters long \(got 6\); make one with `openssl rand -hex 32`/,
    );
    assert.doesNotMatch(weak.output(), /abc123/);
    const drain = spawnFerry(['serve', '--config', path, '--data', join(dir, 'bad-drain'), '--port', '0', '--drain-ms', 'soon']);
    assert.equal((await drain.waitForExit()).code, 1);
    assert.match(drain.output(), /ferry: the drain time \(--drain-ms, FERRY_DRAIN_MS\) must be an integer from 0 to 300000 ms \(got soon\)/);
  });
});

describe('ferry serve start banner', () => {
  test("lists the sources and destinations in force: the file's and those created through the admin API", async () => {
    const dataDir = join(dir, 'banner');
    const store = new SqliteStore({ path: join(dataDir, 'ferry.db') });
    await store.saveSource({ id: 'made-by-api', name: 'Made by API', writeKey: 'api-key-0123456789' });
    await store.saveDestination({
      id: 'api-hooks',
      type: 'Webhooks',
      name: 'API hooks',
      enabled: false,
      sources: ['made-by-api'],
      settings: { webhooks: [{ url: 'https://h.example.com', headers: {} }] },
    });
    await store.close();
    const path = configFile('banner.json', JSON.stringify({ sources: [{ id: 'app', writeKey: 'file-key-0123456789' }] }));
    const ferry = spawnFerry(['serve', '--config', path, '--data', dataDir, '--port', '0', '--host', '127.0.0.1']);
    after(() => void ferry.child.kill('SIGKILL'));
    await ferry.waitForOutput(/sources: .*; destinations: .*/);
    assert.match(ferry.output(), /^ {2}sources: app, made-by-api; destinations: api-hooks$/m);
    ferry.child.kill('SIGTERM');
    assert.deepEqual(await ferry.waitForExit(), { code: 0, signal: null }, ferry.output());
  });
});

describe('ferry listen', () => {
  test('verifies and prints what arrives; refuses a bad signature', async () => {
    const listener = spawnFerry(['listen', '--port', '0', '--secret', 's3cret']);
    after(() => void listener.child.kill('SIGKILL'));
    const [, url] = await listener.waitForOutput(/Listening for webhooks on (http:\/\/\S+)/);
    const body = JSON.stringify({
      version: 1,
      type: 'track',
      userId: 'u-7',
      messageId: 'm-7',
      timestamp: '2026-01-01T00:00:00.000Z',
      context: {},
      event: 'Paid',
      properties: {},
    });
    const good = await fetch(url!, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-signature': createHmac('sha1', 's3cret').update(body).digest('hex') },
      body,
    });
    assert.equal(good.status, 200);
    await listener.waitForOutput(/Paid[\s\S]*m-7[\s\S]*verified/);
    const bad = await fetch(url!, { method: 'POST', headers: { 'content-type': 'application/json', 'x-signature': 'deadbeef' }, body });
    assert.equal(bad.status, 401);
  });
});

describe('ferry dev (npm start)', () => {
  test('runs the demo: a track call delivered to the local receiver and its signature verified', async () => {
    const dev = spawnFerry(['dev', '--port', '0', '--listen-port', '0', '--data', join(dir, 'dev-data')]);
    after(() => void dev.child.kill('SIGKILL'));
    await dev.waitForOutput(/webhook delivered and its signature verified/);
    assert.match(dev.output(), /write key \(source "demo"\): demo-write-key/);
    assert.match(dev.output(), /curl -u 'demo-write-key:'/);
    dev.child.kill('SIGTERM');
    assert.equal((await dev.waitForExit()).code, 0);
  });
});
