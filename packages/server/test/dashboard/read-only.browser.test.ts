import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { inspect, launchBrowser, signIn } from '../helpers/browser.js';
import { cleanups } from '../helpers/cleanups.js';
import { startFerry, testConfig, webhooksDestination } from '../helpers/ferry.js';

// What changes something, on any of these pages: none of it may be offered to a read token.
const changeControls = /^(New |Edit|Reveal|Copy|Disable|Enable|Send test|Rotate|Delete|Create|Save|Generate)/;

async function changeControlsOn(page: Page): Promise<string[]> {
  const names = await page.locator('main button, main a').evaluateAll((els) => els.map((el) => (el.getAttribute('aria-label') ?? el.textContent ?? '').trim()));
  return names.filter((name) => changeControls.test(name));
}

test('a read token sees every page of sources and destinations with no control that would change something', async (t) => {
  const cleanup = cleanups(t);
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/unused'])]), { deliver: false });
  cleanup(() => ferry.stop());
  const token = (await ferry.admin('POST', '/tokens', { name: 'viewer', scope: 'read' })).json.token as string;
  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await signIn(page, ferry.url, token);
  await page.getByText('Read only').waitFor();

  const visit = async (hash: string, ready: () => Promise<void>, name?: string) => {
    await page.evaluate((h) => (location.hash = h), hash);
    await ready();
    assert.deepEqual(await changeControlsOn(page), [], `no change control on ${hash}`);
    assert.equal(await page.locator('form').count(), 0, `no form on ${hash}`);
    if (name) await inspect(page, name);
  };
  await visit('#/overview', () => page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor(), 'read-overview');
  await visit('#/sources', () => page.getByRole('list', { name: 'Sources' }).waitFor(), 'read-sources');
  await visit('#/sources/app/live', () => page.getByRole('heading', { name: 'Live debugger: App' }).waitFor());
  await visit('#/destinations', () => page.getByRole('list', { name: 'Destinations' }).waitFor(), 'read-destinations');
  await visit('#/destinations/hooks', () => page.getByRole('heading', { name: 'hooks', level: 1 }).waitFor());
  // The forms' own routes show no form to a read token.
  await visit('#/destinations/new', () => page.getByRole('list', { name: 'Destinations' }).waitFor());
  await visit('#/sources/app/edit', () => page.getByRole('list', { name: 'Sources' }).waitFor());
  browser.assertClean();
});
