import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { cleanups } from '../helpers/cleanups.js';
import pino from 'pino';
import { createFerry } from '../../src/app.js';
import { adminToken, startFerry, testConfig } from '../helpers/ferry.js';

const csp =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

function builtAssets(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-dashboard-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><script type="module" src="/dashboard/assets/index-Ab12.js"></script>');
  writeFileSync(join(dir, 'assets', 'index-Ab12.js'), 'console.log(1)');
  writeFileSync(join(dir, 'assets', 'index-Cd34.css'), 'body{}');
  writeFileSync(join(dir, 'secret.txt'), 'not an asset');
  return dir;
}

function assertSecure(res: Response) {
  assert.equal(res.headers.get('content-security-policy'), csp);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
}

test('/dashboard/ serves the index uncached and hashed assets cached for good, each with the strict policy', async (t) => {
  const cleanup = cleanups(t);
  const dir = builtAssets();
  cleanup(() => rmSync(dir, { recursive: true, force: true }));
  const ferry = await startFerry(testConfig([]), { dashboardAssets: dir });
  cleanup(() => ferry.stop());

  const index = await fetch(`${ferry.url}/dashboard/`);
  assert.equal(index.status, 200);
  assert.match(index.headers.get('content-type')!, /^text\/html/);
  assert.equal(index.headers.get('cache-control'), 'no-cache');
  assertSecure(index);
  assert.match(await index.text(), /index-Ab12\.js/);

  const js = await fetch(`${ferry.url}/dashboard/assets/index-Ab12.js`);
  assert.equal(js.status, 200);
  assert.match(js.headers.get('content-type')!, /^text\/javascript/);
  assert.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  assertSecure(js);
  const css = await fetch(`${ferry.url}/dashboard/assets/index-Cd34.css`);
  assert.match(css.headers.get('content-type')!, /^text\/css/);

  const bare = await fetch(`${ferry.url}/dashboard`, { redirect: 'manual' });
  assert.equal(bare.status, 301);
  assert.equal(bare.headers.get('location'), '/dashboard/');

  // Nothing outside assets/ is reachable, however the name is spelt.
  for (const path of [
    '/dashboard/assets/..%2Fsecret.txt',
    '/dashboard/assets/..%2Findex.html',
    '/dashboard/assets/.hidden.js',
    '/dashboard/assets/missing-Zz99.js',
    '/dashboard/secret.txt',
  ]) {
    const res = await fetch(ferry.url + path);
    assert.equal(res.status, 404, path);
    assert.doesNotMatch(await res.text(), /not an asset/);
  }
});

test('/dashboard/ answers 503 saying how to build it when the assets were not built', async (t) => {
  const cleanup = cleanups(t);
  const dir = mkdtempSync(join(tmpdir(), 'ferry-dashboard-empty-'));
  cleanup(() => rmSync(dir, { recursive: true, force: true }));
  const ferry = await startFerry(testConfig([]), { dashboardAssets: join(dir, 'none') });
  cleanup(() => ferry.stop());

  const res = await fetch(`${ferry.url}/dashboard/`);
  assert.equal(res.status, 503);
  assertSecure(res);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.match(await res.text(), /dashboard is not built.*\n.*npm run build/);
});

test('with an admin listener, the dashboard lives there and the public port answers 404', async (t) => {
  const cleanup = cleanups(t);
  const dir = builtAssets();
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-test-'));
  cleanup(() => rmSync(dir, { recursive: true, force: true }));
  cleanup(() => rmSync(dataDir, { recursive: true, force: true }));
  const ferry = await createFerry({ config: testConfig([]), dataDir, adminToken, logger: pino({ level: 'silent' }), dashboardAssets: dir, admin: { port: 0 } });
  cleanup(() => ferry.stop());
  const { url, adminUrl } = await ferry.start({ port: 0 });

  assert.equal((await fetch(`${adminUrl}/dashboard/`)).status, 200);
  assert.equal((await fetch(`${url}/dashboard/`)).status, 404);
  assert.equal((await fetch(`${url}/dashboard/assets/index-Ab12.js`)).status, 404);
});
