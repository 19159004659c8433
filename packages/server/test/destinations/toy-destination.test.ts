/**
 * A second destination type needs nothing outside its own folder and its registration: the
 * File type of `fixtures/file-destination/` is handed to a real Ferry, configured through the
 * config and the admin API, and receives events as the Webhooks type would.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../../src/util/clock.js';
import { startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { fileDestinationType } from './fixtures/file-destination/file-destination.js';

describe('a toy second destination type', () => {
  let dir: string;
  let t: TestFerry;
  const clock = new ManualClock();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ferry-file-destination-'));
    // A Webhooks destination of the other source, which does take deletion notices (never sent to here).
    const config = testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/never'], { sources: ['other'] })]);
    config.destinations.push({ id: 'file', type: 'File', name: 'file', enabled: true, sources: ['app'], settings: { path: join(dir, 'from-config.jsonl') } });
    t = await startFerry(config, { clock, deliver: false, destinationTypes: [fileDestinationType] });
  });
  after(async () => {
    await t.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The file's lines, parsed, by messageId: the jobs of one destination are sent in parallel, in no set order. */
  const lines = (name: string) =>
    readFileSync(join(dir, name), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .sort((a, b) => (a.messageId < b.messageId ? -1 : 1));

  test('T01 events routed to a File destination are appended to its file, each once, and the delivery is logged as succeeded', async () => {
    const batch = [
      { type: 'track', userId: 'u1', event: 'Signed Up', messageId: 'm-1' },
      { type: 'identify', userId: 'u2', traits: { plan: 'pro' }, messageId: 'm-2' },
      // Excluded by name, as the integrations map excludes any type.
      { type: 'track', userId: 'u3', event: 'Hidden', messageId: 'm-3', integrations: { File: false } },
    ];
    assert.equal((await t.send('/v1/batch', { batch })).status, 200);
    await t.idle();
    assert.deepEqual(lines('from-config.jsonl'), [
      { type: 'track', messageId: 'm-1', userId: 'u1', event: 'Signed Up' },
      { type: 'identify', messageId: 'm-2', userId: 'u2' },
    ]);
    const { json } = await t.admin('GET', '/deliveries?destinationId=file&status=succeeded');
    assert.deepEqual(json.deliveries.map((d: { messageId: string }) => d.messageId).sort(), ['m-1', 'm-2']);
  });

  test('T02 the admin API checks a File destination with its own schema and shows its settings as it redacts them', async () => {
    const bad = await t.admin('POST', '/destinations', { id: 'file2', type: 'File', sources: ['app'], settings: { path: '' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.errors[0].code, 'invalid_settings');
    assert.match(bad.json.errors[0].message, /^settings\.path: /);
    const path = join(dir, 'from-admin.jsonl');
    const created = await t.admin('POST', '/destinations', { id: 'file2', type: 'File', sources: ['app'], settings: { path } });
    assert.equal(created.status, 201);
    assert.deepEqual(created.json.settings, { path });
    assert.equal((await t.send('/v1/track', { userId: 'u4', event: 'Upgraded', messageId: 'm-4' })).status, 200);
    await t.idle();
    assert.deepEqual(lines('from-admin.jsonl'), [{ type: 'track', messageId: 'm-4', userId: 'u4', event: 'Upgraded' }]);
  });

  test('T03 a type without deletion notices gets none: a deletion request queues a notice for the Webhooks destination only', async () => {
    // u1's events came from `app` (the File destinations' source); `other` is named.
    const regulation = await t.admin('POST', '/regulations', { userIds: ['u1'], sourceIds: ['other'] });
    assert.equal(regulation.status, 202);
    await t.deletionsDone();
    const { json } = await t.admin('GET', '/deliveries');
    const notices = (json.deliveries as { destinationId: string; kind: string }[]).filter((d) => d.kind === 'delete');
    assert.deepEqual(
      notices.map((d) => d.destinationId),
      ['hooks'],
    );
  });

  test('T04 a type without audience changes is refused as an audience destination, naming the field', async () => {
    const refused = await t.admin('POST', '/audiences', {
      id: 'pros',
      name: 'Pros',
      destinationIds: ['hooks', 'file'],
      rule: { type: 'trait', trait: 'plan', equals: 'pro' },
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.json.errors[0].code, 'invalid_settings');
    assert.equal(refused.json.errors[0].path, 'destinationIds[1]');
    assert.match(refused.json.errors[0].message, /of type File, which takes no audience changes/);
    // The Webhooks destination alone is accepted: its type renders audience changes.
    const created = await t.admin('POST', '/audiences', {
      id: 'pros',
      name: 'Pros',
      destinationIds: ['hooks'],
      rule: { type: 'trait', trait: 'plan', equals: 'pro' },
    });
    assert.equal(created.status, 201);
  });
});
