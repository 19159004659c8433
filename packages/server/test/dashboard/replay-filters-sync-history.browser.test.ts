import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/util/clock.js';
import { inspect, launchBrowser, signIn } from '../helpers/browser.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, startFerry, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';

const hourMs = 3_600_000;

test('a delivered delivery sent again after a confirmation, a pending one without Replay; dead letters filtered by error class on the server; an audience shows its sync history from the API', async (t) => {
  const cleanup = cleanups(t);
  const ok = await startReceiver({ status: 200, body: 'ok' });
  cleanup(() => ok.close());
  const refusing = await startReceiver({ status: 400, body: 'no thanks' });
  cleanup(() => refusing.close());
  const clock = new ManualClock(Date.now());
  const ferry = await startFerry(
    testConfig(
      [
        webhooksDestination('hooks', [ok.url]),
        // Refuses for good (HTTP 400): dead letters of class http at once.
        webhooksDestination('strict', [refusing.url]),
        // Nothing listens: pending until its retry window ends, then dead letters of class connect.
        webhooksDestination('down', ['http://127.0.0.1:9/hook'], { circuitBreaker: { enabled: false } }),
      ],
      { audiences: { syncIntervalMs: 86_400_000 } },
    ),
    { clock, deliver: false },
  );
  cleanup(() => ferry.stop());
  const ingest = async (userIds: string[]) =>
    assert.equal((await ferry.send('/v1/batch', { batch: userIds.map((userId) => ({ type: 'track', userId, event: 'Order Completed' })) })).status, 200);
  await ingest(['alice', 'bob']);
  await ferry.idle();

  // Syncs run before the page is opened: the page must read them from the API.
  const audience = { id: 'buyers', name: 'Buyers', destinationIds: ['hooks'], rule: { type: 'event', event: 'Order Completed', minCount: 1 } };
  assert.equal((await ferry.admin('POST', '/audiences', audience)).status, 201);
  for (let i = 0; i < 2; i += 1) {
    clock.advance(60_000);
    assert.equal((await ferry.admin('POST', '/audiences/buyers/sync')).status, 200);
  }
  clock.advance(60_000);
  await ingest(['carol']);
  assert.equal((await ferry.admin('POST', '/audiences/buyers/sync')).json.added, 1);
  // The identifies the syncs queued go out now, so that what arrives later is the replay alone.
  await ferry.idle();

  const of = async (destinationId: string, userId: string) =>
    (await ferry.admin('GET', `/deliveries?destinationId=${destinationId}&userId=${userId}`)).json.deliveries[0].id as number;
  const delivered = await of('hooks', 'alice');
  const pending = await of('down', 'alice');

  const browser = await launchBrowser(ferry.url);
  cleanup(() => browser.close());
  const page = await browser.newPage();
  await signIn(page, ferry.url, adminToken);

  // A delivered one: Replay asks first, then sends the same bytes again.
  await page.goto(`${ferry.url}/dashboard/#/deliveries/${delivered}`);
  await page.getByRole('heading', { name: `Delivery #${delivered}`, level: 1 }).waitFor();
  await page.locator('h1 + .badge', { hasText: 'succeeded' }).waitFor();
  await page.getByRole('button', { name: 'Replay…' }).click();
  const confirm = page.getByRole('dialog', { name: `Replay delivery #${delivered}?` });
  await confirm.waitFor();
  await inspect(page, 'delivery-send-again');
  const before = ok.requests.length;
  await confirm.getByRole('button', { name: 'Send again' }).click();
  await page.getByText('Replayed: the delivery is pending again').waitFor();
  await ferry.idle();
  const [again] = (await ok.waitFor(before + 1)).slice(before);
  assert.equal(again!.body.toString('utf8'), (await page.locator('pre.body').textContent())!, 'the same bytes, sent again');
  await page.getByRole('button', { name: 'Refresh' }).click();
  await page.locator('h1 + .badge', { hasText: 'succeeded' }).waitFor();
  const timeline = page.getByRole('list', { name: 'Attempts, oldest first' });
  await page.waitForFunction(() => document.querySelectorAll('[aria-label="Attempts, oldest first"] li').length === 2);
  assert.match((await timeline.getByRole('listitem').nth(1).textContent())!, /200.*manual/);
  await inspect(page, 'delivery-sent-again');

  // A pending one offers no replay: it is on its way.
  await page.goto(`${ferry.url}/dashboard/#/deliveries/${pending}`);
  await page.getByRole('heading', { name: `Delivery #${pending}`, level: 1 }).waitFor();
  await page.locator('h1 + .badge', { hasText: 'pending' }).waitFor();
  assert.equal(await page.getByRole('button', { name: /Replay/ }).count(), 0);

  // Past the retry window, `down` dead-letters its deliveries with class connect.
  clock.advance(5 * hourMs);
  await ferry.idle();
  assert.equal((await ferry.admin('GET', '/dead-letters')).json.deliveries.length, 6);
  await page.getByRole('link', { name: 'Dead letters' }).click();
  const table = page.getByRole('region', { name: 'Dead letters found' });
  await table.waitFor();
  await page.getByLabel('Error class').selectOption('connect');
  const asked = page.waitForRequest((r) => r.url().includes('/admin/v1/dead-letters?') && r.url().includes('errorClass=connect'));
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await asked;
  await page.waitForFunction(() => document.querySelectorAll('[aria-label="Dead letters found"] tbody tr').length === 3);
  for (const row of await table.locator('tbody tr').allTextContents()) assert.match(row, /down.*connect/);
  await inspect(page, 'dead-letters-filtered');
  await page.getByLabel('Error class').selectOption('http');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await page.waitForFunction(() => document.querySelectorAll('[aria-label="Dead letters found"] tbody tr').length === 3);
  for (const row of await table.locator('tbody tr').allTextContents()) assert.match(row, /strict.*HTTP 400/);

  // The audience's history: the syncs run before the page opened, quiet ones on one line.
  await page.goto(`${ferry.url}/dashboard/#/audiences/audience/buyers`);
  const history = page.getByRole('region', { name: 'History' });
  await history.waitFor();
  const rows = async () => (await history.locator('tbody tr').allTextContents()).map((r) => r.replace(/\s+/g, ' '));
  const first = await rows();
  assert.equal(first.length, 3, first.join(' | '));
  assert.match(first[0]!, /^#4.*1.*0.*0.*1.*3$/, 'sync 4: carol added, 3 members');
  assert.match(first[1]!, /^#2–3 \(2 syncs, no change\)/);
  assert.match(first[2]!, /^#1.*2.*0.*0.*2.*2$/);
  await page.getByRole('button', { name: 'Sync now' }).click();
  await page.getByText('Sync 5 done: 0 changes queued.').waitFor();
  await page.waitForFunction(() => document.querySelectorAll('[aria-labelledby="history-title"] tbody tr').length === 4);
  assert.match((await rows())[0]!, /^#5/);
  await inspect(page, 'audience-sync-history');

  browser.assertClean();
});
