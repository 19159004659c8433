import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import { cleanups } from '../helpers/cleanups.js';
import { freshSchema, stopPostgres } from '../helpers/postgres.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { spawnFerry, type FerryProcess } from '../helpers/spawn-ferry.js';
import { basicAuth, within } from './support.js';

after(() => stopPostgres());

const events = 1000;
const batchSize = 50;
/** The bound: every acknowledged event arrives within this long of the kill, on the default lease. */
const failoverMs = 20_000;

/** Waits, at most until `deadline` (epoch ms), for every id in `ids` to arrive; returns those still missing. */
async function missingAt(receiver: TestReceiver, ids: readonly string[], deadline: number): Promise<string[]> {
  const remaining = new Set(ids);
  let seen = 0;
  while (Date.now() < deadline) {
    for (; seen < receiver.requests.length; seen++) remaining.delete(receiver.requests[seen]!.json.messageId as string);
    if (remaining.size === 0) break;
    await within(Math.max(1, deadline - Date.now()), 'more arrivals', receiver.waitFor(seen + 1)).catch(() => undefined);
  }
  for (; seen < receiver.requests.length; seen++) remaining.delete(receiver.requests[seen]!.json.messageId as string);
  return [...remaining];
}

test('two nodes on one PostgreSQL schema: SIGKILL one during delivery, and every acknowledged event arrives within 20 s', async (t) => {
  const add = cleanups(t);
  const { url, schema } = await freshSchema(add);
  const dir = mkdtempSync(join(tmpdir(), 'ferry-two-nodes-'));
  add(() => rmSync(dir, { recursive: true, force: true }));
  // Two slots (below) make delivery slow enough that the kill finds jobs claimed and in flight.
  const receiver = await startReceiver();
  add(() => receiver.close());
  const config = join(dir, 'ferry.config.json');
  writeFileSync(
    config,
    JSON.stringify({
      sources: [{ id: 'app', name: 'App', writeKey: 'two-node-key' }],
      destinations: [{ id: 'hooks', type: 'Webhooks', name: 'Hooks', enabled: true, sources: ['app'], settings: { webhooks: [{ url: receiver.url }] } }],
      network: { allowPrivateNetworks: true },
      // The default lease (12 s) and renewals (4 s): the failover time under test is the default one.
      delivery: { concurrency: 2, perDestinationConcurrency: 2 },
    }),
  );
  const env = { DATABASE_URL: url, FERRY_DATABASE_SCHEMA: schema, FERRY_ADMIN_TOKEN: 'two-node-admin-token-of-32-chars!!' };
  const nodes: FerryProcess[] = [];
  add(() => {
    for (const n of nodes) n.child.kill('SIGKILL');
  });
  const bases: string[] = [];
  // One after the other: the first creates the schema.
  for (const name of ['a', 'b']) {
    const node = spawnFerry(['serve', '--config', config, '--data', join(dir, name), '--port', '0', '--host', '127.0.0.1'], {
      ...env,
      FERRY_NODE_ID: `node-${name}`,
    });
    nodes.push(node);
    const [, base] = await within(30_000, `node ${name} to start`, node.waitForOutput(/listening on (http:\/\/\S+)/));
    bases.push(base!);
  }
  const [a, b] = nodes as [FerryProcess, FerryProcess];

  // 1000 events, half through each node; every one acknowledged.
  const acked: string[] = [];
  for (let i = 0; i < events / batchSize; i++) {
    const ids = Array.from({ length: batchSize }, (_, j) => `e${i}-${j}`);
    const res = await fetch(`${bases[i % 2]}/v1/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basicAuth('two-node-key') },
      body: JSON.stringify({ batch: ids.map((messageId) => ({ type: 'track', userId: 'u1', event: 'Load', messageId })) }),
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200, await res.text());
    acked.push(...ids);
  }

  // The leases node-a holds, read from the table, not through a node.
  const db = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await db.connect();
  add(() => db.end());
  const heldByA = async () =>
    (
      await db.query<{ message_id: string }>(
        `SELECT d.message_id FROM delivery_queue q JOIN deliveries d ON d.id = q.delivery_id WHERE q.lease_owner = 'node-a'`,
      )
    ).rows.map((r) => r.message_id);

  // Mid-delivery: some arrived, most not yet, and node-a holds jobs (sending or ready).
  await receiver.waitFor(50, 30_000);
  const holdingBy = Date.now() + 30_000;
  let holding: string[];
  while ((holding = await heldByA()).length === 0) {
    assert.ok(Date.now() < holdingBy, 'node a held no lease for 30 s of delivery');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  a.child.kill('SIGKILL');
  const killedAt = Date.now();
  const arrivedBeforeKill = receiver.requests.length;
  assert.equal((await within(10_000, 'node a to die', a.exited)).signal, 'SIGKILL');
  // What it held when it died, frozen now: only node-b can send those, and only after taking them over.
  const heldAtDeath = await heldByA();
  assert.ok(heldAtDeath.length > 0, `node a held no lease when it died (it held ${holding.length} just before)`);

  const missing = await missingAt(receiver, acked, killedAt + failoverMs);
  const lastArrivalMs = Date.now() - killedAt;
  assert.deepEqual(missing.slice(0, 20), [], `${missing.length} acknowledged events had not arrived ${failoverMs} ms after the kill`);

  assert.deepEqual(await heldByA(), [], 'node b took over every job node a held, and recorded it');
  const arrivals = receiver.requests.map((r) => r.json.messageId as string);
  const duplicates = arrivals.length - new Set(arrivals).size;
  t.diagnostic(
    `${acked.length} acknowledged; ${arrivedBeforeKill} arrived before the kill; node a held ${heldAtDeath.length} leases when killed; all arrived by ${lastArrivalMs} ms after it; ` +
      `${arrivals.length} arrivals, ${duplicates} duplicates (sent by node a, not recorded before it died, sent again by node b)`,
  );

  b.child.kill('SIGTERM');
  assert.equal((await within(15_000, 'node b to stop on SIGTERM', b.exited)).code, 0);
});
