import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Route } from 'playwright-core';
import { inspect, launchBrowser, signIn } from '../helpers/browser.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';

/** A Ferry with two destinations and three pending deliveries each (nothing is delivered). */
async function ferryWithBacklog(onCleanup: (fn: () => Promise<void>) => void): Promise<TestFerry> {
  const ferry = await startFerry(
    testConfig([webhooksDestination('crm', ['http://127.0.0.1:9/hook']), webhooksDestination('warehouse', ['http://127.0.0.1:9/hook'])]),
    { deliver: false },
  );
  onCleanup(() => ferry.stop());
  const batch = [1, 2, 3].map((i) => ({ type: 'track', event: 'Order Completed', userId: `u${i}`, messageId: `m${i}` }));
  assert.equal((await ferry.send('/v1/batch', { batch })).status, 200);
  return ferry;
}

/** The admin path of a request (`/stats`, `/destinations?include=stats`), or null for anything else. */
function adminPath(url: string): string | null {
  const u = new URL(url);
  return u.pathname.startsWith('/admin/v1/') ? u.pathname.slice('/admin/v1'.length) + u.search : null;
}

/** Resolves when `done()` says so, checked at each request; or after `guardMs`, so a failing test fails rather than hangs. */
function until(done: () => boolean, guardMs: number): { check: () => void; settled: Promise<void> } {
  let resolve!: () => void;
  const settled = new Promise<void>((r) => (resolve = r));
  const guard = setTimeout(resolve, guardMs);
  return {
    check: () => {
      if (done()) {
        clearTimeout(guard);
        resolve();
      }
    },
    settled,
  };
}

test('OL01 the Overview asks for the session, the totals, every destination with its stats and the series at once, in one call for all destinations', async (t) => {
  const cleanup = cleanups(t);
  const ferry = await ferryWithBacklog(cleanup);
  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await signIn(page, ferry.url, adminToken);

  // Opened again, signed in: the session check is held until the page's own reads are out. A
  // page that waited for the session before asking anything would ask nothing meanwhile.
  const asked: string[] = [];
  const first = ['/stats', '/destinations?include=stats', '/series?window=1h'];
  const others = until(() => first.every((p) => asked.includes(p)), 10_000);
  page.on('request', (request) => {
    const path = adminPath(request.url());
    if (path !== null) asked.push(path);
    others.check();
  });
  let askedWhileHeld: string[] = [];
  await page.route('**/admin/v1/session', async (route: Route) => {
    await others.settled;
    askedWhileHeld = asked.filter((p) => p !== '/session');
    await route.continue();
  });
  await page.reload();
  const rows = page.getByRole('region', { name: 'Destination health' }).locator('tbody tr');
  await rows.filter({ hasText: 'warehouse' }).waitFor();
  assert.deepEqual(askedWhileHeld.slice().sort(), first.slice().sort(), 'all three were asked before the session was answered');
  assert.match((await rows.filter({ hasText: 'crm' }).textContent())!, /crm.*healthy.*3/, 'a row with its pending count');
  assert.equal(await page.locator('.tile', { hasText: 'Deliveries pending' }).locator('dd').textContent(), '6');
  assert.deepEqual(
    asked.filter((p) => /^\/destinations\/[^/?]+\/stats/.test(p)),
    [],
    'no call per destination',
  );
  browser.assertClean();
});

test("OL02 the figures and the destination table show while the charts' code is still loading; the charts follow", async (t) => {
  const cleanup = cleanups(t);
  const ferry = await ferryWithBacklog(cleanup);
  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await signIn(page, ferry.url, adminToken);

  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let held = 0;
  await page.route(/\/dashboard\/assets\/chart-[^/]*\.js$/, async (route: Route) => {
    held++;
    await released;
    await route.continue();
  });
  await page.reload();
  const rows = page.getByRole('region', { name: 'Destination health' }).locator('tbody tr');
  await rows.filter({ hasText: 'warehouse' }).waitFor();
  await page.waitForFunction(() => document.querySelector('.tile dd')?.textContent === '3');
  await page.getByText('Every destination is delivering.').waitFor();
  // At least once: a request of the page before the reload may also reach the route.
  assert.ok(held >= 1, "the charts' code was asked for, and is held");
  assert.equal(await page.locator('.chart canvas').count(), 0, 'no chart yet');
  assert.equal(await page.locator('.chart .chart-placeholder').count(), 2, 'each chart has its place, under its title');
  assert.equal(await page.getByText('Events accepted per minute').count(), 1);
  await page.getByRole('img', { name: 'Events accepted per minute: loading' }).waitFor();

  release();
  await page.getByRole('img', { name: /Events accepted per minute: 3 accepted/ }).waitFor();
  await page.getByRole('img', { name: /Deliveries by outcome per minute/ }).waitFor();
  assert.equal(await page.locator('.chart canvas').count(), 2);
  assert.equal(await page.locator('.chart-placeholder').count(), 0);
  browser.assertClean();
});

test('OL03 charts whose code cannot be fetched say so and load on a retry; destinations that cannot be read leave Needs attention saying so', async (t) => {
  const cleanup = cleanups(t);
  const ferry = await ferryWithBacklog(cleanup);
  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await signIn(page, ferry.url, adminToken);

  // The chart chunk's fetches, until the retry, and every read of the destinations fail as a dropped connection would.
  let chunkFails = true;
  let chunkFetches = 0;
  await page.route(/\/dashboard\/assets\/chart-[^/]*\.js$/, async (route: Route) => {
    chunkFetches++;
    if (chunkFails) await route.abort('connectionreset');
    else await route.continue();
  });
  await page.route('**/admin/v1/destinations?include=stats', (route: Route) => route.abort('connectionreset'));
  await page.reload();
  await page.waitForFunction(() => document.querySelector('.tile dd')?.textContent === '3');
  const attention = page.getByRole('region', { name: 'Needs attention' });
  await attention.getByText('Destination health unavailable.').waitFor();
  assert.equal(await attention.getByRole('status').count(), 0, 'no longer loading');
  await page.getByRole('region', { name: 'Destinations' }).getByRole('alert').getByText('The Ferry server could not be reached.').waitFor();

  const traffic = page.getByRole('region', { name: 'Traffic' });
  await traffic.getByRole('alert').first().waitFor();
  assert.deepEqual(await traffic.getByRole('alert').allTextContents(), ['Charts could not be loaded. Retry', 'Charts could not be loaded. Retry']);
  assert.equal(await page.locator('[aria-busy="true"]').count(), 0, 'nothing is left busy');
  await inspect(page, 'overview-unavailable');
  assert.ok(chunkFetches > 0);
  const failedFetches = chunkFetches;
  chunkFails = false;
  await traffic.getByRole('button', { name: 'Retry' }).first().click();
  await page.getByRole('img', { name: /Events accepted per minute: 3 accepted/ }).waitFor();
  await page.getByRole('img', { name: /Deliveries by outcome per minute/ }).waitFor();
  assert.equal(await traffic.getByRole('alert').count(), 0, 'a retry brings both charts in');
  assert.ok(chunkFetches > failedFetches, 'the retry fetched the code again');
  browser.assertClean();
});
