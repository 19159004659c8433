import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Analytics } from '@ferry/analytics';
import { ManualClock } from '../../src/util/clock.js';
import { inspect, launchBrowser, signIn } from '../helpers/browser.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, startFerry, testConfig, webhooksDestination, writeKey } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';
import { within } from '../helpers/within.js';

const hourMs = 3_600_000;
const users = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];

test('deliveries and dead letters: a failing delivery found, its attempts seen, replayed once the receiver is fixed; dead letters counted by a dry run, then replayed selected and as a job', async (t) => {
  const cleanup = cleanups(t);
  const receiver = await startReceiver({ status: 500, body: 'upstream down' });
  cleanup(() => receiver.close());
  // Delivery is driven by hand on a manual clock, so the retry window can end without waiting 4 hours.
  const clock = new ManualClock(Date.now());
  const ferry = await startFerry(testConfig([webhooksDestination('hooks', [receiver.url], { circuitBreaker: { enabled: false } })]), {
    clock,
    deliver: false,
    replay: { inlineLimit: 2, batchSize: 1 },
  });
  cleanup(() => ferry.stop());

  const analytics = new Analytics(writeKey, { endpoint: ferry.url, flushAt: users.length });
  for (const userId of users) analytics.track({ userId, event: 'Order Completed', properties: { total: 42 } });
  assert.equal((await analytics.close({ timeout: 10_000 })).status, 'complete');
  await ferry.idle();
  clock.advance(60_000);
  await ferry.idle();
  clock.advance(5 * hourMs);
  await ferry.idle();
  assert.equal((await ferry.admin('GET', '/dead-letters')).json.deliveries.length, users.length, 'every delivery died after its retry window');

  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await signIn(page, ferry.url, adminToken);

  // Find alice's failing delivery.
  await page.getByRole('link', { name: 'Deliveries' }).click();
  await page.getByRole('heading', { name: 'Deliveries', level: 1 }).waitFor();
  await page.getByRole('region', { name: 'Deliveries found' }).waitFor();
  await page.getByLabel('User id').fill('alice');
  await page.getByLabel('Status').selectOption('dead');
  await page.getByLabel('Destination').selectOption('hooks');
  await page.getByRole('button', { name: 'Search' }).click();
  const found = page.getByRole('region', { name: 'Deliveries found' });
  await page.waitForFunction(() => document.querySelectorAll('[aria-label="Deliveries found"] tbody tr').length === 1);
  assert.match((await found.getByRole('row').nth(1).textContent())!, /dead.*hooks.*Order Completed.*alice/);
  await inspect(page, 'deliveries');
  await found.getByRole('link', { name: /^Delivery \d+$/ }).click();

  // Its page: the exact body sent, and each attempt with status, class, latency and the response's start.
  await page.getByRole('heading', { name: /^Delivery #\d+$/, level: 1 }).waitFor();
  const timeline = page.getByRole('list', { name: 'Attempts, oldest first' });
  await timeline.waitFor();
  assert.equal(await timeline.getByRole('listitem').count(), 3, 'three attempts before the window ended');
  for (const text of await timeline.getByRole('listitem').allTextContents()) {
    assert.match(text, /500/);
    assert.match(text, /http/);
    assert.match(text, /upstream down/);
    assert.ok(text.includes(receiver.url), 'the URL called');
  }
  const shownBody = (await page.locator('pre.body').textContent())!;
  assert.equal(shownBody, findBody(receiver.requests, 'alice'), 'the exact bytes sent');
  assert.match(shownBody, /"userId":"alice"/);
  await inspect(page, 'delivery-dead');

  // Fix the receiver, replay, and see it succeed.
  receiver.reply({ status: 200, body: 'ok' });
  const before = receiver.requests.length;
  await page.getByRole('button', { name: 'Replay', exact: true }).click();
  await page.getByText('Replayed: the delivery is pending again').waitFor();
  await ferry.idle();
  const [delivered] = (await receiver.waitFor(before + 1)).slice(before);
  assert.equal(delivered!.body.toString('utf8'), shownBody, 'the replay sent the same bytes');
  await page.getByRole('button', { name: 'Refresh' }).click();
  await page.locator('h1 + .badge', { hasText: 'succeeded' }).waitFor();
  assert.equal(await timeline.getByRole('listitem').count(), 4);
  const last = (await timeline.getByRole('listitem').nth(3).textContent())!;
  assert.match(last, /200/);
  assert.match(last, /manual/, 'a replay is a manual attempt');
  await inspect(page, 'delivery-replayed');

  // Dead letters: two selected, counted by a dry run, then replayed at once.
  await page.getByRole('link', { name: 'Dead letters' }).click();
  const deadTable = page.getByRole('region', { name: 'Dead letters found' });
  await deadTable.waitFor();
  assert.equal(await deadTable.locator('tbody tr').count(), 5);
  const deadIds = (await ferry.admin('GET', '/dead-letters')).json.deliveries.map((d: { id: number }) => d.id) as number[];
  await page.getByLabel(`Select dead letter ${deadIds[0]}`).check();
  await page.getByLabel(`Select dead letter ${deadIds[1]}`).check();
  await page.getByRole('button', { name: 'Replay selected (2)…' }).click();
  const dryRun = page.getByRole('alertdialog', { name: 'Dry run' });
  await dryRun.getByText('2 dead letters selected would be replayed').waitFor();
  assert.equal((await ferry.admin('GET', '/dead-letters')).json.deliveries.length, 5, 'a dry run replays nothing');
  await inspect(page, 'dead-letters-dry-run');
  await dryRun.getByRole('button', { name: 'Replay 2' }).click();
  await page.getByText('Replayed 2 dead letters.').waitFor();
  await page.waitForFunction(() => document.querySelectorAll('[aria-label="Dead letters found"] tbody tr').length === 3);

  // The rest by filter: more than the inline limit, so a job whose progress is shown to its end.
  await page.getByLabel('Destination').selectOption('hooks');
  await page.getByLabel('Error class').selectOption('http');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await page.getByRole('button', { name: 'Replay all matching the filter…' }).click();
  await dryRun.getByText('3 dead letters matching the filter would be replayed').waitFor();
  await dryRun.getByRole('button', { name: 'Replay 3' }).click();
  await page.getByRole('heading', { name: 'Replay job', exact: true }).waitFor();
  await within(30_000, 'the replay job to end', ferry.ferry.replayJobs.idle());
  await page.getByText('3 of 3 replayed').waitFor();
  await page.getByText(/: done$/).waitFor();
  await page.getByText('No dead letter matches.').waitFor();
  await page.getByRole('region', { name: 'Replay job list' }).getByText('done', { exact: true }).waitFor();
  await inspect(page, 'dead-letters-job');

  await ferry.idle();
  const received = new Set((await receiver.waitFor(before + 6)).slice(before).map((r) => r.json.userId as string));
  assert.deepEqual([...received].sort(), users, 'every dead letter was delivered once replayed');
  browser.assertClean();
});

function findBody(requests: { body: Buffer }[], userId: string): string {
  return requests.map((r) => r.body.toString('utf8')).find((b) => b.includes(`"userId":"${userId}"`))!;
}
