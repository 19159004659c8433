import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Analytics } from '@ferry/analytics';
import { inspect, launchBrowser, signIn } from '../helpers/browser.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, startFerry, testConfig, webhooksDestination, writeKey } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';

test('overview: a destination whose receiver fails is listed under "Needs attention" and first in the table; the page is usable by keyboard', async (t) => {
  const cleanup = cleanups(t);
  const good = await startReceiver({ status: 200 });
  cleanup(() => good.close());
  const broken = await startReceiver({ status: 500, body: 'down for maintenance' });
  cleanup(() => broken.close());
  const ferry = await startFerry(testConfig([webhooksDestination('a-good', [good.url]), webhooksDestination('b-broken', [broken.url])]), { deliver: false });
  cleanup(() => ferry.stop());

  const analytics = new Analytics(writeKey, { endpoint: ferry.url, flushAt: 3 });
  for (let i = 0; i < 3; i++) analytics.track({ userId: `u${i}`, event: 'Order Completed' });
  assert.equal((await analytics.close({ timeout: 10_000 })).status, 'complete');
  await ferry.idle();
  assert.equal(good.requests.length, 3);
  assert.equal(broken.requests.length, 3, 'each first attempt failed; the retries wait');

  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await signIn(page, ferry.url, adminToken);
  const attention = page.getByRole('region', { name: 'Needs attention' });
  await attention.getByRole('listitem').filter({ hasText: 'b-broken' }).waitFor();
  assert.match((await attention.textContent())!, /b-broken: failing/);
  assert.doesNotMatch((await attention.textContent())!, /a-good/);
  const rows = page.getByRole('region', { name: 'Destination health' }).locator('tbody tr');
  assert.match((await rows.nth(0).textContent())!, /b-broken.*failing.*3/, 'what needs attention comes first, with its 3 pending');
  assert.match((await rows.nth(1).textContent())!, /a-good.*healthy/);
  assert.equal(await page.locator('.tile', { hasText: 'Deliveries pending' }).locator('dd').textContent(), '3');
  await inspect(page, 'overview-attention');

  // Keyboard: the skip link is the first stop and moves focus to the content; the navigation follows.
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'main');
  await page.getByRole('link', { name: 'Destinations' }).focus();
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Destinations', level: 1 }).waitFor();
  assert.equal(await page.getByRole('link', { name: 'Destinations' }).getAttribute('aria-current'), 'page');
  browser.assertClean();
});
