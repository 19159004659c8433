import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Analytics } from '@ferry/analytics';
import { inspect, launchBrowser, signIn } from '../helpers/browser.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, startFerry, testConfig, webhooksDestination, writeKey } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';

test('sign-in: a wrong token is refused at its field; the admin token opens the overview, which shows the events sent and delivered', async (t) => {
  const cleanup = cleanups(t);
  const receiver = await startReceiver();
  cleanup(() => receiver.close());
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', [receiver.url])]));
  cleanup(() => ferry.stop());

  const analytics = new Analytics(writeKey, { endpoint: ferry.url, flushAt: 5 });
  for (let i = 0; i < 5; i++) analytics.track({ userId: `u${i}`, event: 'Order Completed', properties: { n: i } });
  assert.equal((await analytics.close({ timeout: 10_000 })).status, 'complete');
  await receiver.waitFor(5);
  await ferry.idle();

  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await page.goto(`${ferry.url}/dashboard/`);
  await inspect(page, 'sign-in');
  await page.getByLabel('Admin or read token').fill('not-a-valid-token-at-all-0000000000');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('This token is not valid').waitFor();
  assert.equal(await page.getByLabel('Admin or read token').getAttribute('aria-invalid'), 'true');
  assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'a refused token is not kept');

  await signIn(page, ferry.url, adminToken);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('ferry.dashboard.token')), adminToken);
  assert.equal(await page.evaluate(() => localStorage.length), 0, 'the token is kept for the tab only');
  assert.doesNotMatch(page.url(), new RegExp(adminToken), 'the token is never in the URL');
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  const tile = (label: string) => page.locator('.tile', { hasText: label }).locator('dd');
  await page.waitForFunction(() => document.querySelector('.tile dd')?.textContent === '5');
  assert.equal(await tile('Events stored').textContent(), '5');
  assert.equal(await tile('Delivered').textContent(), '5');
  await page.getByText('Every destination is delivering.').waitFor();
  const row = page.getByRole('region', { name: 'Destination health' }).getByRole('row', { name: /hooks/ });
  assert.match((await row.textContent())!, /healthy/);
  assert.match((await row.textContent())!, /100\.0 %/, 'the success rate of the hour');
  // The charts: their labels carry the window's totals for a screen reader.
  await page.getByRole('img', { name: /Events accepted per minute: 5 accepted/ }).waitFor();
  await page.getByRole('img', { name: /Deliveries by outcome per minute: 5 delivered, 0 retried, 0 dead/ }).waitFor();
  assert.equal(await page.locator('.chart canvas').count(), 2);
  await inspect(page, 'overview');
  await page.getByRole('button', { name: 'Last day' }).click();
  await page.getByRole('img', { name: /Events accepted per 5 minutes: 5 accepted/ }).waitFor();
  await inspect(page, 'overview-day');

  // A reload keeps the session (sessionStorage), and signing out forgets the token.
  await page.reload();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('Admin or read token').waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  browser.assertClean();
});

test('a read token signs in as read only and sees the overview', async (t) => {
  const cleanup = cleanups(t);
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]), { deliver: false });
  cleanup(() => ferry.stop());
  const token = (await ferry.admin('POST', '/tokens', { name: 'viewer', scope: 'read' })).json.token as string;

  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await signIn(page, ferry.url, token);
  await page.getByText('Read only').waitFor();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  browser.assertClean();
});

test("a revoked token kept in the tab leads to sign-in, and signing in again shows the overview without the old token's refusals", async (t) => {
  const cleanup = cleanups(t);
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]), { deliver: false });
  cleanup(() => ferry.stop());
  const made = (await ferry.admin('POST', '/tokens', { name: 'old', scope: 'admin' })).json as { id: string; token: string };
  assert.equal((await ferry.admin('DELETE', `/tokens/${made.id}`)).status, 204);

  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await page.goto(`${ferry.url}/dashboard/`);
  await page.evaluate((token) => sessionStorage.setItem('ferry.dashboard.token', token), made.token);
  // Opened on the Overview with the revoked token: the session check and the page's three reads go out early, and all are refused.
  const refused = ['/session', '/stats', '/destinations?include=stats', '/series?window=1h'].map((path) =>
    page.waitForResponse((r) => r.url().endsWith(`/admin/v1${path}`) && r.status() === 401),
  );
  await page.reload();
  await Promise.all(refused);
  await page.getByLabel('Admin or read token').waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'the refused token is forgotten');

  // Signing in again in the same page, within the early answers' 10 s: the page asks with the new token.
  await page.getByLabel('Admin or read token').fill(adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  // Checked before the page's 10 s refresh could replace a refusal shown first.
  await page.locator('.tiles, [role="alert"]').first().waitFor();
  assert.equal(await page.getByRole('alert').count(), 0, 'no refusal of the old token is shown');
  await page.getByText('Every destination is delivering.').waitFor({ timeout: 5_000 });
  await page.getByRole('img', { name: /Events accepted per minute/ }).waitFor({ timeout: 5_000 });
  assert.equal(await page.getByRole('alert').count(), 0);
  assert.equal(await page.locator('.tile', { hasText: 'Events stored' }).locator('dd').textContent(), '0');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('ferry.dashboard.token')), adminToken, 'the new token is kept');
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
  browser.assertClean();
});
