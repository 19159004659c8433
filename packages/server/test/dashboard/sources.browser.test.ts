import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Analytics } from '@ferry/analytics';
import { inspect, launchBrowser, signIn } from '../helpers/browser.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, startFerry, testConfig, webhooksDestination, writeKey } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';

test('sources: create through the form (a bad id shown at its field), edit with a new write key that works at once', async (t) => {
  const cleanup = cleanups(t);
  const ferry = await startFerry(testConfig([]), { deliver: false });
  cleanup(() => ferry.stop());
  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await signIn(page, ferry.url, adminToken);

  await page.getByRole('link', { name: 'Sources' }).click();
  await page.getByRole('list', { name: 'Sources' }).waitFor();
  assert.equal(await page.getByRole('list', { name: 'Sources' }).getByRole('listitem').count(), 2);
  assert.match((await page.getByRole('listitem').filter({ hasText: 'App' }).textContent())!, /…/, 'the write key is masked');
  assert.doesNotMatch((await page.content())!, new RegExp(writeKey), 'no write key is on the page before it is asked for');
  await inspect(page, 'sources');

  // Revealed and copied on request only.
  await page.getByRole('button', { name: 'Reveal write key of App' }).click();
  await page.locator('code.secret', { hasText: writeKey }).waitFor();
  await page.getByRole('button', { name: 'Copy write key' }).click();
  await page.getByText('Copied.').waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), writeKey);
  await inspect(page, 'sources-revealed');
  await page.getByRole('button', { name: 'Hide' }).click();
  assert.doesNotMatch((await page.content())!, new RegExp(writeKey), 'hidden again');

  // An edit that leaves the write key empty keeps it.
  await page.getByRole('link', { name: 'Edit Other' }).click();
  await page.getByLabel('Name').fill('Other app');
  await page.getByRole('button', { name: 'Save source' }).click();
  await page.getByRole('heading', { name: 'Other app' }).waitFor();
  assert.equal((await ferry.send('/v1/track', { userId: 'u1', event: 'Kept' }, { writeKey: 'other-write-key' })).status, 200, 'the key is unchanged');

  await page.getByRole('link', { name: 'New source' }).click();
  const generated = await page.getByLabel('Write key').inputValue();
  assert.match(generated, /^wk_[0-9a-f]{48}$/, 'a random write key is offered');
  await page.getByLabel('Id').fill('Web App');
  await page.getByLabel('Name').fill('Web app');
  await page.getByRole('button', { name: 'Create source' }).click();
  await page.locator('#source-id-error').waitFor();
  assert.match((await page.locator('#source-id-error').textContent())!, /must match/);
  assert.equal(await page.getByLabel('Id').getAttribute('aria-invalid'), 'true');
  await inspect(page, 'source-form-error');
  await page.getByLabel('Id').fill('web');
  await page.getByRole('button', { name: 'Create source' }).click();
  await page.getByRole('heading', { name: 'Web app' }).waitFor();
  assert.equal((await ferry.admin('GET', '/sources/web')).json.writeKeyHint, `…${generated.slice(-4)}`);
  assert.equal((await ferry.send('/v1/track', { userId: 'u1', event: 'Signed Up' }, { writeKey: generated })).status, 200, 'the new key is accepted');

  await page.getByRole('link', { name: 'Edit Web app' }).click();
  await page.getByLabel('Name').fill('Web application');
  await page.getByLabel('New write key').fill('wk_replaced_0123456789abcdef');
  await page.getByRole('button', { name: 'Save source' }).click();
  await page.getByRole('heading', { name: 'Web application' }).waitFor();
  assert.equal((await ferry.send('/v1/track', { userId: 'u1', event: 'Signed Up' }, { writeKey: 'wk_replaced_0123456789abcdef' })).status, 200);
  assert.equal((await ferry.send('/v1/track', { userId: 'u1', event: 'Signed Up' }, { writeKey: generated })).status, 401, 'the old key stops working');
  browser.assertClean();
});

test('live debugger: an event sent with @ferry/analytics shows with its routing; pause holds, filters narrow, rejections show their codes', async (t) => {
  const cleanup = cleanups(t);
  const receiver = await startReceiver();
  cleanup(() => receiver.close());
  const ferry = await startFerry(
    testConfig([
      webhooksDestination('hooks', [receiver.url]),
      webhooksDestination('orders-only', [receiver.url], { filter: { allow: { event: { prefix: 'Order ' } } } }),
    ]),
  );
  cleanup(() => ferry.stop());
  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await signIn(page, ferry.url, adminToken);
  await page.goto(`${ferry.url}/dashboard/#/sources/app/live`);
  await page.getByRole('heading', { name: 'Live debugger: App' }).waitFor();
  await page
    .getByRole('status')
    .filter({ hasText: /^Live$/ })
    .waitFor();

  const analytics = new Analytics(writeKey, { endpoint: ferry.url, flushAt: 1 });
  cleanup(() => analytics.close({ timeout: 5_000 }).then(() => undefined));
  analytics.track({ userId: 'alice', event: 'Signed Up', properties: { plan: 'pro' } });
  analytics.track({ userId: 'bob', event: 'Order Completed', properties: { total: 12 } });
  await analytics.flush({ timeout: 10_000 });
  const rows = page.getByRole('region', { name: 'Live events' }).locator('tbody tr');
  await page.waitForFunction(() => document.querySelectorAll('[aria-label="Live events"] tbody tr').length === 2);
  assert.match((await rows.filter({ hasText: 'alice' }).textContent())!, /Signed Up.*hooks/);

  // Open one: its normalised JSON and where it went (the filter of orders-only dropped it).
  await rows.filter({ hasText: 'alice' }).getByRole('button').click();
  const detail = page.getByRole('region', { name: 'Selected event' });
  await detail.waitFor();
  const json = JSON.parse((await detail.getByLabel('Normalised message').textContent())!);
  assert.equal(json.event, 'Signed Up');
  assert.deepEqual(json.properties, { plan: 'pro' });
  assert.equal(json.context.library.name, '@ferry/analytics');
  assert.match((await detail.textContent())!, /Routed tohooks/);
  assert.match((await detail.textContent())!, /Dropped by a filterorders-only/);
  await inspect(page, 'source-live');

  await page.getByLabel('User id').fill('bob');
  assert.equal(await rows.count(), 1);
  assert.match((await rows.first().textContent())!, /Order Completed.*hooks, orders-only/);
  await page.getByLabel('User id').fill('');
  await page.getByLabel('Type').selectOption('identify');
  await page.getByText('No event matches the filters.').waitFor();
  await page.getByLabel('Type').selectOption('');

  await page.getByRole('button', { name: 'Pause' }).click();
  analytics.identify({ userId: 'carol', traits: { plan: 'free' } });
  await analytics.flush({ timeout: 10_000 });
  await page.getByText('Paused (1 waiting)').waitFor();
  assert.equal(await rows.count(), 2, 'held while paused');
  await page.getByRole('button', { name: 'Resume' }).click();
  await rows.filter({ hasText: 'carol' }).waitFor();

  // A refused message of the source, with its code.
  assert.equal((await ferry.send('/v1/batch', { batch: [{ type: 'track', userId: 'dan' }] })).status, 200);
  await page.getByRole('button', { name: 'Refresh' }).click();
  const rejections = page.getByRole('region', { name: 'Rejected messages' });
  await rejections.getByText('missing_event').waitFor();
  assert.match((await rejections.textContent())!, /A track call needs a non-empty `event`/);
  await inspect(page, 'source-live-paused');
  browser.assertClean();
});
