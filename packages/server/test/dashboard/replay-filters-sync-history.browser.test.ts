import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import type { Locator } from 'playwright-core';
import { ManualClock } from '../../src/util/clock.js';
import { inspect, launchBrowser, signIn } from '../helpers/browser.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, startFerry, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';

const hourMs = 3_600_000;

/** The cells of each row of `table`'s body, by their column (`data-label`), their text trimmed. */
async function cellsOf(table: Locator): Promise<Record<string, string>[]> {
  return table
    .locator('tbody tr')
    .evaluateAll((rows) =>
      rows.map((row) =>
        Object.fromEntries([...row.querySelectorAll('th, td')].map((cell) => [cell.getAttribute('data-label') ?? '', cell.textContent!.trim()])),
      ),
    );
}

/** A row's cells without its times, which the test does not pin. */
const untimed = ({ Started, Finished, ...rest }: Record<string, string>) => (assert.ok(Started && Finished, 'started and finished are shown'), rest);

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
  const deliveredToBob = await of('hooks', 'bob');
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

  // Another delivery, reached with the Replay… dialog open: nothing of the one before is kept.
  await page.getByRole('button', { name: 'Replay…' }).click();
  await confirm.waitFor();
  await page.goto(`${ferry.url}/dashboard/#/deliveries/${deliveredToBob}`);
  await page.getByRole('heading', { name: `Delivery #${deliveredToBob}`, level: 1 }).waitFor();
  assert.equal(await page.getByRole('dialog').count(), 0, "the last delivery's dialog is closed");
  assert.equal(await page.getByText('Replayed:').count(), 0, "the last delivery's notice is gone");
  await page.locator('h1 + .badge', { hasText: 'succeeded' }).waitFor();
  assert.match((await page.locator('pre.body').textContent())!, /"userId":\s*"bob"/, "bob's body, not alice's");
  await page.getByRole('button', { name: 'Replay…' }).click();
  await page.getByRole('dialog', { name: `Replay delivery #${deliveredToBob}?` }).waitFor();
  await page.getByRole('button', { name: 'Cancel' }).click();

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
  // The list shows 3 rows already (connect's): wait for http's answer, and for every row to be one of it.
  const answered = page.waitForResponse((r) => r.url().includes('/admin/v1/dead-letters?') && r.url().includes('errorClass=http'));
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await answered;
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('[aria-label="Dead letters found"] tbody tr')];
    return rows.length === 3 && rows.every((row) => row.querySelector('[data-label="Destination"]')?.textContent === 'strict');
  });
  for (const row of await cellsOf(table)) {
    assert.equal(row['Destination'], 'strict');
    assert.match(row['Last error']!, /HTTP 400/);
  }

  // The audience's history: the syncs run before the page opened, quiet ones on one line.
  await page.goto(`${ferry.url}/dashboard/#/audiences/audience/buyers`);
  const history = page.getByRole('region', { name: 'History' });
  await history.waitFor();
  const figures = (sync: string, added: number, removed: number, changed: number, queued: number, members: number) => ({
    Sync: sync,
    Added: String(added),
    Removed: String(removed),
    Changed: String(changed),
    Queued: String(queued),
    Members: String(members),
  });
  assert.deepEqual((await cellsOf(history)).map(untimed), [
    figures('#4', 1, 0, 0, 1, 3), // carol added
    figures('#2–3 (2 syncs, no change)', 0, 0, 0, 0, 2),
    figures('#1', 2, 0, 0, 2, 2),
  ]);
  await page.getByRole('button', { name: 'Sync now' }).click();
  await page.getByText('Sync 5 done: 0 changes queued.').waitFor();
  await page.waitForFunction(() => document.querySelectorAll('[aria-labelledby="history-title"] tbody tr').length === 4);
  assert.deepEqual(untimed((await cellsOf(history))[0]!), figures('#5', 0, 0, 0, 0, 3));
  await inspect(page, 'audience-sync-history');

  // A sync that fails (a new member to queue, and the deliveries table gone) is in the history at once too.
  await ingest(['dave']);
  const db = new Database(join(ferry.dataDir, 'ferry.db'));
  cleanup(() => db.close());
  db.exec('ALTER TABLE deliveries RENAME TO deliveries_away');
  await page.getByRole('button', { name: 'Sync now' }).click();
  await page.getByRole('alert').waitFor();
  await page.waitForFunction(() => document.querySelectorAll('[aria-labelledby="history-title"] tbody tr').length === 5);
  const [failed] = await cellsOf(history);
  assert.equal(failed!['Sync'], 'failed');
  assert.match(failed!['Error']!, /the sync failed/);
  assert.equal(await page.getByText('Sync 5 done').count(), 0, "the last sync's notice is gone");
  await inspect(page, 'audience-sync-failed');
  db.exec('ALTER TABLE deliveries_away RENAME TO deliveries');

  browser.assertClean();
});
