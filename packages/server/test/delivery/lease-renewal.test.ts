import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { LeaseRenewal, type TrackedLease } from '../../src/delivery/lease-renewal.js';
import { ManualClock } from '../../src/util/clock.js';
import { capturedLogger } from '../helpers/captured-logger.js';
import { cleanups } from '../helpers/cleanups.js';
import { freshSchema, stopPostgres } from '../helpers/postgres.js';
import { turn, until } from '../helpers/until.js';
import { within } from '../helpers/within.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';

after(() => stopPostgres());

const t0 = Date.UTC(2026, 0, 1);
const leaseMs = 12_000;
const intervalMs = 4_000;

/** Two nodes' stores on one fresh schema, with 20 jobs of destination d1 queued. */
async function twoNodes(onCleanup: (fn: () => Promise<void>) => void): Promise<[PgStore, PgStore]> {
  const { url, schema } = await freshSchema(onCleanup);
  const a = await PgStore.open({ connectionString: url, schema, poolSize: 2 });
  onCleanup(() => a.close());
  const b = await PgStore.open({ connectionString: url, schema, poolSize: 2 });
  onCleanup(() => b.close());
  await a.enqueue(
    Array.from({ length: 20 }, (_, i) => ({ destinationId: 'd1', kind: 'audience' as const, body: `{"n":${i}}` })),
    t0,
  );
  return [a, b];
}

function renewalOf(store: PgStore, owner: string, clock: ManualClock, lost: number[] = []) {
  const { logger } = capturedLogger();
  return new LeaseRenewal({
    store,
    owner,
    clock,
    timers: clock.timers,
    leaseMs,
    intervalMs,
    logger,
    onLost: (ids) => lost.push(...ids),
    onError: (e) => {
      throw e;
    },
  });
}

test("renewals keep a live worker's jobs past the old 60 s lease; once they stop, another node takes them within the lease", async (t) => {
  const add = cleanups(t);
  const [a, b] = await twoNodes(add);
  const clock = new ManualClock(t0);
  const held = await a.claim({ destinationId: 'd1', owner: 'node-a', nowMs: t0, leaseMs, limit: 20 });
  assert.equal(held.length, 20);
  const leases: TrackedLease[] = held.map((j) => ({ id: j.id, leasedUntilMs: t0 + leaseMs }));
  const renewal = renewalOf(a, 'node-a', clock);
  for (const l of leases) renewal.track(l);
  renewal.start();
  // 75 s, one renewal interval at a time: each round moves every lease's end a full lease ahead.
  while (clock.now() < t0 + 75_000) {
    clock.advance(intervalMs);
    const expected = clock.now() + leaseMs;
    await until(() => leases.every((l) => l.leasedUntilMs === expected), `leases renewed to ${expected - t0}`);
    assert.deepEqual(await b.claim({ destinationId: 'd1', owner: 'node-b', nowMs: clock.now(), leaseMs, limit: 20 }), [], 'still held by node-a');
  }
  // node-a dies: no more renewals. Within one lease, node-b has every job.
  await renewal.stop();
  const diedAt = clock.now();
  clock.set(diedAt + leaseMs);
  const taken = await b.claim({ destinationId: 'd1', owner: 'node-b', nowMs: clock.now(), leaseMs, limit: 20 });
  assert.deepEqual(
    taken.map((j) => j.id).sort((x, y) => x - y),
    held.map((j) => j.id).sort((x, y) => x - y),
  );
});

test('a renewal reports the leases another node took, and leaves alone those forgotten meanwhile', async (t) => {
  const add = cleanups(t);
  const [a, b] = await twoNodes(add);
  const clock = new ManualClock(t0);
  const held = await a.claim({ destinationId: 'd1', owner: 'node-a', nowMs: t0, leaseMs, limit: 3 });
  const lost: number[] = [];
  const renewal = renewalOf(a, 'node-a', clock, lost);
  const leases = held.map((j) => ({ id: j.id, leasedUntilMs: t0 + leaseMs }));
  for (const l of leases) renewal.track(l);
  // node-a stalled past its lease; node-b took the jobs, and node-a has recorded the first meanwhile.
  clock.set(t0 + leaseMs + 1);
  const taken = await b.claim({ destinationId: 'd1', owner: 'node-b', nowMs: clock.now(), leaseMs, limit: 20 });
  assert.equal(taken.length, 20, "node-a's three, whose leases ran out, and the rest");
  renewal.forget(leases[0]!.id);
  await renewal.renew();
  assert.deepEqual(
    lost.sort((x, y) => x - y),
    [leases[1]!.id, leases[2]!.id].sort((x, y) => x - y),
  );
  assert.equal(renewal.size, 0, 'lost leases are not renewed again');
  assert.equal(leases[1]!.leasedUntilMs, t0 + leaseMs, 'a lost lease keeps its old end');
});

test('a round stuck on the store is given up on after one interval: the next round starts at once and renews in time, and a stop does not wait for it', async (t) => {
  const add = cleanups(t);
  const [a, b] = await twoNodes(add);
  const clock = new ManualClock(t0);
  const held = await a.claim({ destinationId: 'd1', owner: 'node-a', nowMs: t0, leaseMs, limit: 3 });
  const leases: TrackedLease[] = held.map((j) => ({ id: j.id, leasedUntilMs: t0 + leaseMs }));
  // The real store, but the next call set to hang is one whose connection never answers.
  let hangNext = true;
  const stuck: Pick<PgStore, 'renewLeases'> = {
    renewLeases: (owner, ids, untilMs) => {
      if (!hangNext) return a.renewLeases(owner, ids, untilMs);
      hangNext = false;
      return new Promise<number[]>(() => {});
    },
  };
  const { logger, lines } = capturedLogger();
  const errors: unknown[] = [];
  const renewal = new LeaseRenewal({
    store: stuck,
    owner: 'node-a',
    clock,
    timers: clock.timers,
    leaseMs,
    intervalMs,
    logger,
    onLost: (ids) => assert.fail(`no lease is lost, yet ${ids.join(', ')} were`),
    onError: (e) => errors.push(e),
  });
  for (const l of leases) renewal.track(l);
  renewal.start();

  clock.advance(intervalMs); // the first round starts, and hangs
  await turn();
  assert.equal(errors.length, 0);
  clock.advance(intervalMs); // one interval later it is given up on ...
  await until(() => errors.length === 1, 'the stuck round to be given up on');
  assert.ok(lines.some((l) => l.level === 40 && /did not finish within its interval/.test(l.msg as string)));
  clock.advance(0); // ... and the next starts at once
  const renewedAt = clock.now();
  await until(() => leases.every((l) => l.leasedUntilMs === renewedAt + leaseMs), 'the next round to renew');
  // Past the end of the first lease, which the stuck round failed to extend: still node-a's.
  clock.set(t0 + leaseMs + 1);
  assert.deepEqual(
    await b
      .claim({ destinationId: 'd1', owner: 'node-b', nowMs: clock.now(), leaseMs, limit: 20 })
      .then((j) => j.filter((x) => leases.some((l) => l.id === x.id))),
    [],
  );

  // A stop during a stuck round ends when the round is given up on.
  hangNext = true;
  clock.advance(intervalMs);
  const stopped = renewal.stop();
  clock.advance(intervalMs);
  await within(5000, 'the stop to end', stopped);
  assert.equal(errors.length, 2);
});
