import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import { inspect, launchBrowser, signIn } from '../helpers/browser.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, startFerry, testConfig } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';

test('destinations: create through the form (a bad URL shown at its field), test event, disable and enable, rotate, edit, delete', async (t) => {
  const cleanup = cleanups(t);
  const receiver = await startReceiver();
  cleanup(() => receiver.close());
  const ferry = await startFerry(testConfig([]));
  cleanup(() => ferry.stop());
  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await signIn(page, ferry.url, adminToken);

  await page.getByRole('link', { name: 'Destinations' }).click();
  await page.getByText('No destination yet.').waitFor();
  await page.getByRole('link', { name: 'New destination' }).click();
  await page.getByLabel('Id').fill('crm-hooks');
  await page.getByLabel('Name').fill('CRM hooks');
  await page.getByRole('checkbox', { name: /App/ }).check();
  await page.getByLabel('Webhook URLs').fill('ftp://example.com/hook');
  await page.getByRole('button', { name: 'Create destination' }).click();
  const urlError = page.locator('#dest-urls-error');
  await urlError.waitFor();
  assert.match((await urlError.textContent())!, /settings\.webhooks\[0\]\.url/, "the server's message for the field, at the field");
  assert.equal(await page.getByLabel('Webhook URLs').getAttribute('aria-invalid'), 'true');
  await inspect(page, 'destination-form-error');

  await page.getByLabel('Webhook URLs').fill(receiver.url);
  await page.getByLabel('Shared secret').fill('first-secret');
  await page.getByRole('button', { name: 'Create destination' }).click();
  await page.getByRole('heading', { name: 'CRM hooks', level: 1 }).waitFor();
  const stored = (await ferry.admin('GET', '/destinations/crm-hooks')).json;
  assert.deepEqual(stored.sources, ['app']);
  assert.equal(stored.settings.webhooks[0].url, receiver.url);
  assert.equal(stored.settings.hasSharedSecret, true);

  // A test event is sent now and its outcome shown per URL.
  await page.getByRole('button', { name: 'Send test event to CRM hooks' }).click();
  await page.getByText('Test event delivered.').waitFor();
  const attempt = page.getByRole('region', { name: 'Test attempts' }).getByRole('row').nth(1);
  assert.match((await attempt.textContent())!, /200/);
  const [sent] = await receiver.waitFor(1);
  assert.equal(sent!.headers['x-signature'], createHmac('sha1', 'first-secret').update(sent!.body).digest('hex'));
  await inspect(page, 'destination');

  await page.getByRole('button', { name: 'Disable CRM hooks' }).click();
  await page.getByRole('button', { name: 'Enable CRM hooks' }).waitFor();
  assert.equal((await ferry.admin('GET', '/destinations/crm-hooks')).json.enabled, false);
  await page.locator('.badge', { hasText: 'disabled' }).waitFor();
  await page.getByRole('button', { name: 'Enable CRM hooks' }).click();
  await page.getByRole('button', { name: 'Disable CRM hooks' }).waitFor();
  assert.equal((await ferry.admin('GET', '/destinations/crm-hooks')).json.enabled, true);

  // Rotation shows the new secret once; X-Signature keeps the previous one through the overlap.
  await page.getByRole('button', { name: 'Rotate secret of CRM hooks' }).click();
  await page.getByLabel('Secret to rotate').selectOption('sharedSecret');
  await page.getByRole('button', { name: 'Rotate now' }).click();
  const secretBox = page.locator('.secret-box code');
  await secretBox.waitFor();
  const newSecret = (await secretBox.textContent())!;
  assert.ok(newSecret.length >= 16, 'a new secret is shown');
  await inspect(page, 'destination-rotated');
  await page.getByRole('button', { name: 'Done, hide it' }).click();
  assert.equal(await page.locator('.secret-box').count(), 0, 'the secret is gone once hidden');
  assert.equal((await ferry.admin('GET', '/destinations/crm-hooks')).json.settings.previousSharedSecrets.length, 1, 'the old secret overlaps');

  // Edit keeps the secret (a merge patch names only what changed).
  await page.getByRole('link', { name: 'Edit CRM hooks' }).click();
  await page.getByLabel('Name').fill('CRM webhooks');
  await inspect(page, 'destination-form');
  await page.getByRole('button', { name: 'Save destination' }).click();
  await page.getByRole('heading', { name: 'CRM webhooks', level: 1 }).waitFor();
  const edited = (await ferry.admin('GET', '/destinations/crm-hooks')).json;
  assert.equal(edited.name, 'CRM webhooks');
  assert.equal(edited.settings.hasSharedSecret, true);

  await page.getByRole('link', { name: 'All destinations' }).click();
  await page.getByRole('list', { name: 'Destinations' }).waitFor();
  await inspect(page, 'destinations');
  await page.getByRole('button', { name: 'Delete CRM webhooks' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete CRM webhooks?' });
  await dialog.waitFor();
  await inspect(page, 'destination-delete-dialog');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  assert.equal((await ferry.admin('GET', '/destinations/crm-hooks')).status, 200, 'cancel deletes nothing');
  await page.getByRole('button', { name: 'Delete CRM webhooks' }).click();
  await dialog.getByRole('button', { name: 'Delete destination' }).click();
  await page.getByText('No destination yet.').waitFor();
  assert.equal((await ferry.admin('GET', '/destinations/crm-hooks')).status, 404);
  browser.assertClean();
});
