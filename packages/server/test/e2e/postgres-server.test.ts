import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { createFerry } from '../../src/app.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { adminToken, startFerry, testConfig, webhooksDestination, writeKey } from '../helpers/ferry.js';
import { freshSchema, stopPostgres } from '../helpers/postgres.js';
import { cleanups } from '../helpers/cleanups.js';
import { startReceiver } from '../helpers/receiver.js';
import { spawnFerry } from '../helpers/spawn-ferry.js';
import { within } from '../helpers/within.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

after(() => stopPostgres());

describe('the server on PostgreSQL', () => {
  test('ingestion, delivery, dead letters and deletion work the same as on SQLite', async (t) => {
    const after = cleanups(t);
    const { url, schema } = await freshSchema(after);
    const receiver = await startReceiver();
    after(() => receiver.close());
    const store = await PgStore.open({ connectionString: url, schema });
    const ferry = await startFerry(testConfig([webhooksDestination('hooks', [receiver.url])]), { store });
    after(() => ferry.stop());

    const res = await ferry.send('/v1/batch', {
      batch: [
        { type: 'track', userId: 'pg-user', event: 'A', messageId: 'pg-1' },
        { type: 'identify', userId: 'pg-user', traits: { plan: 'pro' }, messageId: 'pg-2' },
        { type: 'track', event: 'no identity' },
      ],
    });
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.json.rejected.map((r: any) => r.code),
      ['missing_identity'],
    );
    const got = await receiver.waitFor(2);
    assert.deepEqual(got.map((r) => r.json.messageId).sort(), ['pg-1', 'pg-2']);
    assert.equal((await ferry.send('/v1/batch', { batch: [{ type: 'track', userId: 'pg-user', event: 'A', messageId: 'pg-1' }] })).status, 200);
    assert.equal((await ferry.admin('GET', '/stats')).json.events, 2, 'idempotent on messageId');

    const reg = await ferry.admin('POST', '/regulations', { userIds: ['pg-user'] });
    assert.equal(reg.status, 202);
    await ferry.deletionsDone();
    const status = await ferry.admin('GET', `/regulations/${reg.json.id}`);
    assert.equal(status.json.eventsDeleted, 2);
    const [del] = (await receiver.waitFor(3)).slice(2);
    assert.equal(del!.json.type, 'delete');
    assert.equal(del!.json.userId, 'pg-user');
  });

  test("two nodes on one database share the work (every event delivered once) and see each other's admin edits", async (t) => {
    const after = cleanups(t);
    const { url, schema } = await freshSchema(after);
    const receiver = await startReceiver();
    after(() => receiver.close());
    const config = testConfig([webhooksDestination('hooks', [receiver.url])], {
      delivery: { claimBatchSize: 5, concurrency: 8, perDestinationConcurrency: 8 },
    });
    const nodes = [];
    // The catalogue refresh runs on this clock; new jobs wake a node's worker without it.
    const clock = new ManualClock();
    const refreshMs = 5000;
    for (let i = 0; i < 2; i++) {
      const store = await PgStore.open({ connectionString: url, schema });
      const node = await createFerry({ config, store, adminToken, logger: pino({ level: 'silent' }), clock, catalogRefreshMs: refreshMs });
      nodes.push({ node, base: await node.start(0, '127.0.0.1') });
    }
    after(async () => {
      for (const { node } of nodes) await node.stop();
    });
    const n = 300;
    const auth = 'Basic ' + Buffer.from(`${writeKey}:`).toString('base64');
    for (let b = 0; b < n / 50; b++) {
      const base = nodes[b % 2]!.base;
      const res = await fetch(`${base}/v1/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: auth },
        body: JSON.stringify({ batch: Array.from({ length: 50 }, (_, i) => ({ type: 'track', userId: 'u', event: 'E', messageId: `n-${b}-${i}` })) }),
      });
      assert.equal(res.status, 200);
    }
    await receiver.waitFor(n);
    const ids = receiver.requests.map((r) => r.json.messageId);
    assert.equal(new Set(ids).size, n);
    assert.equal(ids.length, n, 'no job was claimed by both nodes');

    // An admin edit on one node reaches the other through the shared store.
    const patch = await fetch(`${nodes[0]!.base}/admin/v1/destinations/hooks`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ enabled: false }),
    });
    assert.equal(patch.status, 200);
    const other = nodes[1]!.node;
    assert.equal(other.catalog.destination('hooks')?.enabled, true, 'not before its next reload');
    const reloaded = once(other.catalog, 'catalog:reloaded');
    clock.advance(refreshMs);
    await within(10_000, 'the periodic reload', reloaded);
    assert.equal(other.catalog.destination('hooks')?.enabled, false, 'the other node saw the change');
    const late = await fetch(`${nodes[1]!.base}/v1/track`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: auth },
      body: JSON.stringify({ userId: 'u', event: 'E', messageId: 'after-disable' }),
    });
    assert.equal(late.status, 200);
    const routed = await fetch(`${nodes[1]!.base}/admin/v1/deliveries?messageId=after-disable`, { headers: { authorization: `Bearer ${adminToken}` } });
    assert.deepEqual(((await routed.json()) as { deliveries: unknown[] }).deliveries, []);
  });

  test('ferry serve uses DATABASE_URL', async (t) => {
    const after = cleanups(t);
    const { url, schema } = await freshSchema(after);
    const dir = mkdtempSync(join(tmpdir(), 'ferry-pgcli-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const config = join(dir, 'ferry.config.json');
    writeFileSync(config, JSON.stringify({ sources: [{ id: 'app', name: 'App', writeKey: 'k' }], destinations: [] }));
    const ferry = spawnFerry(['serve', '--config', config, '--port', '0', '--host', '127.0.0.1'], {
      DATABASE_URL: url,
      FERRY_DATABASE_SCHEMA: schema,
      FERRY_ADMIN_TOKEN: 'postgres-cli-admin-token-32-chars',
    });
    after(() => void ferry.child.kill('SIGKILL'));
    const [, base] = await ferry.waitForOutput(/listening on (http:\/\/\S+)/);
    assert.match(ferry.output(), /store: postgres/);
    const health = (await (await fetch(`${base}/health`)).json()) as { store: string };
    assert.equal(health.store, 'postgres');
  });
});
