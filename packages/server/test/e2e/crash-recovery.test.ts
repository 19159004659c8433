import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { spawnFerry } from '../helpers/spawn-ferry.js';
import { startReceiver } from '../helpers/receiver.js';

test('SIGKILL while delivering under load, restart: every event that got a 200 is delivered', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-crash-'));
  const receiver = await startReceiver();
  after(async () => {
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const config = join(dir, 'ferry.config.json');
  writeFileSync(
    config,
    JSON.stringify({
      sources: [{ id: 'app', name: 'App', writeKey: 'crash-key' }],
      destinations: [
        { id: 'hooks', type: 'Webhooks', name: 'Hooks', enabled: true, sources: ['app'], settings: { webhooks: [{ url: receiver.url }] } },
      ],
      network: { allowPrivateNetworks: true },
      // A short lease, so the restarted server takes over the dead one's claims within a second.
      delivery: { leaseMs: 1000, timeoutMs: 500, concurrency: 8, perDestinationConcurrency: 8, claimBatchSize: 8 },
    }),
  );
  const args = ['serve', '--config', config, '--data', join(dir, 'data'), '--port', '0', '--host', '127.0.0.1'];
  const env = { FERRY_ADMIN_TOKEN: 'crash-admin' };

  const first = spawnFerry(args, env);
  const [, base] = await first.waitForOutput(/listening on (http:\/\/\S+)/);
  const acked = new Set<string>();
  const auth = 'Basic ' + Buffer.from('crash-key:').toString('base64');
  let sent = 0;
  let killed = false;

  // Load: batches of 25 from 4 concurrent senders until the kill; each acknowledged id is recorded.
  const sender = async (lane: number) => {
    for (let i = 0; !killed && i < 400; i++) {
      const ids = Array.from({ length: 25 }, (_, j) => `m-${lane}-${i}-${j}`);
      sent += ids.length;
      try {
        const res = await fetch(`${base}/v1/batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: auth },
          body: JSON.stringify({ batch: ids.map((messageId) => ({ type: 'track', userId: 'u', event: 'Load', messageId })) }),
        });
        if (res.status === 200) for (const id of ids) acked.add(id);
      } catch {
        // The server died mid-request: not acknowledged, so not owed.
      }
    }
  };
  const load = Promise.all([0, 1, 2, 3].map(sender));
  await receiver.waitFor(300);
  first.child.kill('SIGKILL');
  killed = true;
  const { signal } = await first.exited;
  assert.equal(signal, 'SIGKILL');
  await load;
  const deliveredBeforeCrash = receiver.requests.length;
  assert.ok(acked.size > deliveredBeforeCrash, `the kill came mid-delivery (acked ${acked.size}, delivered ${deliveredBeforeCrash})`);

  const second = spawnFerry(args, env);
  after(() => void second.child.kill('SIGKILL'));
  await second.waitForOutput(/listening on/);
  // Count arrivals incrementally (the receiver shares this process) until every acknowledged id is in.
  const remaining = new Set(acked);
  const messageIds = new Set<string>();
  let seen = 0;
  const deadline = Date.now() + 60_000;
  while (remaining.size > 0 && Date.now() < deadline) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([receiver.waitFor(seen + 1), new Promise((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
    clearTimeout(timer);
    for (; seen < receiver.requests.length; seen++) {
      const id = receiver.requests[seen]!.json.messageId as string;
      remaining.delete(id);
      messageIds.add(id);
    }
  }
  assert.deepEqual([...remaining], [], `${remaining.size} acknowledged events were never delivered`);
  t.diagnostic(`acked ${acked.size} of ${sent} sent; ${seen - messageIds.size} redelivered after the crash (at least once)`);
  second.child.kill('SIGTERM');
  const stopped = await second.exited;
  assert.equal(stopped.code, 0, 'SIGTERM stops cleanly');
});
