import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { spawnFerry, type FerryProcess } from '../helpers/spawn-ferry.js';
import { basicAuth, faultSeed, longForm, randomInt, seededRandom, within } from './support.js';

const cycles = longForm ? 10 : 3;
const lanes = 4;
const batchSize = 20;
/** Per lane and cycle: a bound on the load, should the kill never come. */
const maxBatchesPerLane = 300;

/** Waits (bounded) until every id in `ids` has arrived at the receiver; returns those still missing. */
async function waitForIds(receiver: TestReceiver, ids: Set<string>, ms: number): Promise<Set<string>> {
  const remaining = new Set(ids);
  const deadline = Date.now() + ms;
  let seen = 0;
  while (Date.now() < deadline) {
    for (; seen < receiver.requests.length; seen++) remaining.delete(receiver.requests[seen]!.json.messageId as string);
    if (remaining.size === 0) break;
    await within(Math.max(1, deadline - Date.now()), 'more arrivals', receiver.waitFor(seen + 1)).catch(() => undefined);
  }
  return remaining;
}

test(`repeated SIGKILL under load (${cycles} cycles), restart on the same data: no acknowledged event is lost`, async (t) => {
  const seed = faultSeed();
  const random = seededRandom(seed);
  t.diagnostic(`seed ${seed} (replay with FERRY_FAULTS_SEED=${seed})`);

  const dir = mkdtempSync(join(tmpdir(), 'ferry-kill-'));
  const receiver = await startReceiver();
  let current: FerryProcess | undefined;
  after(async () => {
    current?.child.kill('SIGKILL');
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const config = join(dir, 'ferry.config.json');
  writeFileSync(
    config,
    JSON.stringify({
      sources: [{ id: 'app', name: 'App', writeKey: 'kill-key' }],
      destinations: [{ id: 'hooks', type: 'Webhooks', name: 'Hooks', enabled: true, sources: ['app'], settings: { webhooks: [{ url: receiver.url }] } }],
      network: { allowPrivateNetworks: true },
      // A short lease, so each restarted server takes over the killed one's claims within a second.
      delivery: { leaseMs: 2000, timeoutMs: 500, concurrency: 8, perDestinationConcurrency: 8, claimBatchSize: 8, pollIntervalMs: 50 },
    }),
  );
  const args = ['serve', '--config', config, '--data', join(dir, 'data'), '--port', '0', '--host', '127.0.0.1'];
  const env = { FERRY_ADMIN_TOKEN: 'kill-admin-token-of-32-characters' };
  const auth = basicAuth('kill-key');

  const acked = new Set<string>();
  let sent = 0;
  const perCycle: string[] = [];

  for (let cycle = 0; cycle < cycles; cycle++) {
    const proc = spawnFerry(args, env);
    current = proc;
    const [, base] = await within(30_000, `ferry start (cycle ${cycle})`, proc.waitForOutput(/listening on (http:\/\/\S+)/));
    // The kill comes a random time after the first acknowledged batch of the cycle: mid-commit,
    // mid-delivery or between the two, wherever the load happens to be.
    const killAfterMs = randomInt(random, 20, 400);
    let killed = false;
    let killTimer: NodeJS.Timeout | undefined;
    let ackedThisCycle = 0;
    const kill = () => {
      if (killed) return;
      killed = true;
      proc.child.kill('SIGKILL');
    };
    const lane = async (l: number) => {
      for (let i = 0; !killed && i < maxBatchesPerLane; i++) {
        const ids = Array.from({ length: batchSize }, (_, j) => `k${cycle}-${l}-${i}-${j}`);
        sent += ids.length;
        try {
          const res = await fetch(`${base}/v1/batch`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: auth },
            body: JSON.stringify({ batch: ids.map((messageId) => ({ type: 'track', userId: `u${l}`, event: 'Load', messageId })) }),
          });
          if (res.status === 200) {
            for (const id of ids) acked.add(id);
            ackedThisCycle += ids.length;
            killTimer ??= setTimeout(kill, killAfterMs);
          } else {
            await res.body?.cancel();
          }
        } catch {
          // The server died mid-request: never acknowledged, so not owed.
        }
      }
    };
    await Promise.all(Array.from({ length: lanes }, (_, l) => lane(l)));
    clearTimeout(killTimer);
    kill(); // The load bound was reached first (a very slow machine): kill now.
    const { signal } = await within(10_000, 'the killed process to exit', proc.exited);
    assert.equal(signal, 'SIGKILL');
    perCycle.push(`cycle ${cycle}: killed ${killAfterMs} ms after the first 200, ${ackedThisCycle} acknowledged`);
  }

  // The last restart: it must deliver whatever every earlier process acknowledged.
  const last = spawnFerry(args, env);
  current = last;
  const [, base] = await within(30_000, 'final ferry start', last.waitForOutput(/listening on (http:\/\/\S+)/));
  const missing = await waitForIds(receiver, acked, 60_000);
  assert.deepEqual([...missing].slice(0, 20), [], `${missing.size} acknowledged events were never delivered`);

  const stats = (await (await fetch(`${base}/admin/v1/stats`, { headers: { authorization: 'Bearer kill-admin-token-of-32-characters' } })).json()) as {
    events: number;
  };
  assert.ok(stats.events >= acked.size, `the store holds every acknowledged event (${stats.events} >= ${acked.size})`);

  const arrivals = receiver.requests.map((r) => r.json.messageId as string);
  const unique = new Set(arrivals);
  const duplicates = arrivals.length - unique.size;
  const unacknowledgedButDelivered = [...unique].filter((id) => !acked.has(id)).length;
  for (const line of perCycle) t.diagnostic(line);
  t.diagnostic(
    `acknowledged ${acked.size} of ${sent} sent over ${cycles} kills; ${arrivals.length} arrivals, ` +
      `${duplicates} duplicates (at least once), ${unacknowledgedButDelivered} delivered though their answer was lost`,
  );

  last.child.kill('SIGTERM');
  const stopped = await within(15_000, 'SIGTERM stop', last.exited);
  assert.equal(stopped.code, 0, 'SIGTERM stops cleanly after the crashes');
});
