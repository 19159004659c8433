import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Analytics } from '@ferry/analytics';
import type { Page } from 'playwright-core';
import { inspect, launchBrowser, signIn } from '../helpers/browser.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, startFerry, testConfig, webhooksDestination, writeKey } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';

test('deletion requests and audiences: a request created and listed until done; an audience made with a rule (its error at the field), its members listed and synced; a computed trait; a read token sees no change button', async (t) => {
  const cleanup = cleanups(t);
  const receiver = await startReceiver();
  cleanup(() => receiver.close());
  // `strict` refuses for good (HTTP 400): its deliveries are dead letters at once, for the read-only view.
  const refusing = await startReceiver({ status: 400, body: 'no thanks' });
  cleanup(() => refusing.close());
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', [receiver.url]), webhooksDestination('strict', [refusing.url])]), { deliver: false });
  cleanup(() => ferry.stop());

  const analytics = new Analytics(writeKey, { endpoint: ferry.url, flushAt: 20 });
  analytics.identify({ userId: 'u1', traits: { plan: 'pro' } });
  analytics.identify({ userId: 'u2', traits: { plan: 'pro' } });
  analytics.identify({ userId: 'u3', traits: { plan: 'free' } });
  analytics.track({ userId: 'u1', event: 'Order Completed' });
  analytics.track({ userId: 'u1', event: 'Order Completed' });
  analytics.track({ userId: 'u2', event: 'Order Completed' });
  assert.equal((await analytics.close({ timeout: 10_000 })).status, 'complete');
  await ferry.idle();
  await receiver.waitFor(6);
  assert.equal((await ferry.admin('GET', '/dead-letters')).json.deliveries.length, 6, 'strict dead-lettered every event');

  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await signIn(page, ferry.url, adminToken);

  // An audience: the server's refusal of a rule key shows at that field.
  await page.getByRole('link', { name: 'Audiences' }).click();
  await page.getByText('No audience yet.').waitFor();
  await inspect(page, 'audiences-empty');
  await page.getByRole('link', { name: 'New audience' }).click();
  await page.getByLabel('Id', { exact: true }).fill('pro-users');
  await page.getByLabel('Name', { exact: true }).fill('Pro Users');
  await page.getByRole('checkbox', { name: /^hooks/ }).check();
  await page.getByLabel('Event name').fill('Order Completed');
  await page.getByLabel('At least this many times').fill('0');
  await page.getByRole('button', { name: 'Create audience' }).click();
  const minError = page.locator('#aud-min-error');
  await minError.waitFor();
  assert.match((await minError.textContent())!, /minCount/);
  assert.equal(await page.getByLabel('At least this many times').getAttribute('aria-invalid'), 'true');
  await inspect(page, 'audience-form-error');

  await page.getByLabel('Who qualifies').selectOption('trait');
  await page.getByLabel('Trait', { exact: true }).fill('plan');
  await page.getByLabel('Equals').fill('pro');
  // The count a create would find, before anything is stored.
  await page.getByRole('button', { name: 'Preview members' }).click();
  await page.getByText('2 users would be members now.').waitFor();
  assert.equal((await ferry.admin('GET', '/audiences')).json.audiences.length, 0, 'a preview stores nothing');
  await page.getByRole('button', { name: 'Create audience' }).click();
  await page.getByRole('heading', { name: 'Pro Users', level: 1 }).waitFor();
  const members = page.getByRole('region', { name: 'Member list' });
  await members.waitFor();
  assert.deepEqual(await members.locator('tbody th').allTextContents(), ['u1', 'u2']);
  const stored = (await ferry.admin('GET', '/audiences/pro-users')).json;
  assert.deepEqual(stored.rule, { type: 'trait', trait: 'plan', equals: 'pro' });
  assert.deepEqual(stored.destinationIds, ['hooks']);
  await page.getByRole('button', { name: 'Sync now' }).click();
  await page.getByText('Sync 2 done: 0 changes queued.').waitFor();
  await inspect(page, 'audience');

  // Edit: the rule changes, the members stay until the next sync.
  await page.getByRole('link', { name: 'Edit Pro Users' }).click();
  await page.getByLabel('Equals').fill('free');
  await page.getByRole('button', { name: 'Save audience' }).click();
  await page.getByRole('heading', { name: 'Pro Users', level: 1 }).waitFor();
  assert.deepEqual((await ferry.admin('GET', '/audiences/pro-users')).json.rule, { type: 'trait', trait: 'plan', equals: 'free' });
  await page.getByRole('button', { name: 'Sync now' }).click();
  await page.getByText('Sync 3 done: 3 changes queued.').waitFor();
  await page.waitForFunction(() => [...document.querySelectorAll('[aria-label="Member list"] tbody th')].map((e) => e.textContent).join() === 'u3');

  // A computed trait counts an event per user.
  await page.getByRole('link', { name: 'All audiences and computed traits' }).click();
  await page.getByRole('link', { name: 'New computed trait' }).click();
  await page.getByLabel('Id', { exact: true }).fill('orders');
  await page.getByLabel('Name', { exact: true }).fill('Orders');
  await page.getByRole('checkbox', { name: /^hooks/ }).check();
  await page.getByLabel('Event name').fill('Order Completed');
  await page.getByLabel('Within the last days').fill('30');
  await page.getByRole('button', { name: 'Preview profiles' }).click();
  await page.getByText('2 users would hold a count now.').waitFor();
  await page.getByRole('button', { name: 'Create computed trait' }).click();
  await page.getByRole('heading', { name: 'Orders', level: 1 }).waitFor();
  await page.getByRole('region', { name: 'Member list' }).waitFor();
  assert.deepEqual(await page.getByRole('region', { name: 'Member list' }).locator('tbody tr').allTextContents(), ['u12', 'u21']);
  await page.getByRole('link', { name: 'All audiences and computed traits' }).click();
  await page.getByRole('region', { name: 'Computed traits list' }).waitFor();
  assert.match((await page.getByRole('region', { name: 'Audiences list' }).textContent())!, /Pro Users.*trait plan = "free"/);
  await inspect(page, 'audiences');

  // A deletion request, created and listed until it is done.
  await page.getByRole('link', { name: 'Deletion requests' }).click();
  await page.getByText('No deletion request.').waitFor();
  await page.getByLabel('User ids').fill('u3');
  await page.getByRole('button', { name: 'Create deletion request' }).click();
  await page.getByText(/Request reg_[0-9a-f]+ created for 1 user/).waitFor();
  await ferry.deletionsDone();
  const row = page.getByRole('region', { name: 'Deletion requests' }).locator('tbody tr');
  await row.locator('.badge', { hasText: 'done' }).waitFor();
  assert.match((await row.textContent())!, /1 \(ids not kept\)/);
  const regulation = (await ferry.admin('GET', '/regulations')).json.regulations[0];
  assert.equal(regulation.eventsDeleted, 1, "u3's identify");
  await inspect(page, 'regulations');

  // A read token sees every page and no button that would change something.
  const readToken = (await ferry.admin('POST', '/tokens', { name: 'viewer', scope: 'read' })).json.token as string;
  await page.getByRole('button', { name: 'Sign out' }).click();
  await signIn(page, ferry.url, readToken);
  await page.getByText('Read only').waitFor();
  const deadId = (await ferry.admin('GET', '/dead-letters')).json.deliveries[0].id as number;
  // Each page, and what shows once its data is in.
  const views: [string, 'region' | 'list' | 'heading', string][] = [
    ['#/deliveries', 'region', 'Deliveries found'],
    [`#/deliveries/${deadId}`, 'list', 'Attempts, oldest first'],
    ['#/dead-letters', 'region', 'Dead letters found'],
    ['#/regulations', 'region', 'Deletion requests'],
    ['#/audiences', 'region', 'Computed traits list'],
    ['#/audiences/audience/pro-users', 'heading', 'Syncs'],
    ['#/audiences/computed-trait/orders', 'region', 'Member list'],
  ];
  for (const [hash, role, name] of views) {
    await page.evaluate((h) => (location.hash = h), hash);
    await page.getByRole(role, { name, exact: true }).waitFor();
    assert.deepEqual(await changeControls(page), [], `${hash} offers no change to a read token`);
  }
  await page.evaluate(() => (location.hash = '#/dead-letters'));
  await page.getByRole('region', { name: 'Dead letters found' }).waitFor();
  assert.equal(await page.getByRole('checkbox').count(), 0, 'nothing to select');
  await inspect(page, 'dead-letters-read-only');
  await page.evaluate(() => (location.hash = '#/audiences/new/audience'));
  await page.getByRole('region', { name: 'Computed traits list' }).waitFor();
  assert.equal(await page.getByRole('button', { name: /Create/ }).count(), 0, 'the form is not offered at its address either');
  browser.assertClean();
});

/** The buttons and links on the page that would change something (those that read, page or sign out are left out). */
async function changeControls(page: Page): Promise<string[]> {
  const names = await page
    .locator('main button, main a.button, main a[href*="/edit"], main a[href*="/new"], main form textarea')
    .evaluateAll((els) => els.map((e) => (e.getAttribute('aria-label') ?? e.textContent ?? '').trim()));
  const reading = /^(Search|Clear|Filter|Refresh|Previous page|Next page|All|Pending|Done|Show all that was kept|Show less)$/;
  return names.filter((n) => !reading.test(n));
}
