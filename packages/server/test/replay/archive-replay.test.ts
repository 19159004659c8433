/**
 * Replay from the archive (docs/delivery.md, "Replay from the archive"; docs/admin-api.md):
 * stored events sent to a destination as a job, on both stores, through a real server and a
 * real receiver. Time is a manual clock: a job held back by its destination's backlog goes on
 * only when the test moves it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { unrouted } from '../../src/store/replay-jobs-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { freshSchema, stopPostgres } from '../helpers/postgres.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { within } from '../helpers/within.js';

after(() => stopPostgres());

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const hourMs = 3_600_000;
const dayMs = 24 * hourMs;
const isoAt = (ms: number) => new Date(ms).toISOString();
/** How long a held archive job waits before it looks again, in these tests (on the manual clock). */
const pollMs = 1000;

/** A place for a store, opened again after a stop (a restart) finding what the one before left. */
const backends: { name: string; place: (onCleanup: (fn: () => Promise<void> | void) => void, clock: ManualClock) => Promise<() => Promise<Store>> }[] = [
  {
    name: 'sqlite',
    place: async (onCleanup, clock) => {
      const dir = mkdtempSync(join(tmpdir(), 'ferry-archive-'));
      onCleanup(() => rmSync(dir, { recursive: true, force: true }));
      return async () => new SqliteStore({ path: join(dir, 'ferry.db'), clock });
    },
  },
  {
    name: 'postgres',
    place: async (onCleanup, clock) => {
      const { url, schema } = await freshSchema(onCleanup);
      return () => PgStore.open({ connectionString: url, schema, clock });
    },
  },
];

/** Cleanups run last-registered first. */
function cleanupStack() {
  const stack: (() => Promise<void> | void)[] = [];
  return {
    add: (fn: () => Promise<void> | void) => void stack.push(fn),
    run: async () => {
      for (const fn of stack.reverse()) await fn();
    },
  };
}

/** Polls `check` until it holds, failing after 30 s: what a job does in the background is awaited, never slept for. */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const track = (n: number, userId = `u${n}`) => ({ type: 'track', userId, event: 'E', properties: { n, email: `${userId}@example.com` }, messageId: `k${n}` });

interface Setup {
  t: TestFerry;
  clock: ManualClock;
  receiver: TestReceiver;
  open: () => Promise<Store>;
  cleanup: ReturnType<typeof cleanupStack>;
  /** Stops the server (a restart's first half); the cleanup then leaves it be. */
  stop: () => Promise<void>;
}

/** A server on the backend with no worker running (driven by `t.idle()`), archive batches of 2, and a receiver. */
async function setUp(
  backend: (typeof backends)[number],
  onAfter: (fn: () => Promise<void>) => void,
  destinations: unknown[] = [],
  wrap: (store: Store) => Store = (store) => store,
  archivePollMs = pollMs,
): Promise<Setup> {
  const cleanup = cleanupStack();
  onAfter(() => cleanup.run());
  const clock = new ManualClock(T0);
  const open = await backend.place(cleanup.add, clock);
  const receiver = await startReceiver({ status: 200 });
  cleanup.add(() => receiver.close());
  const t = await startFerry(testConfig(destinations), {
    clock,
    deliver: false,
    store: wrap(await open()),
    replay: { inlineLimit: 2, batchSize: 2, archiveBatchSize: 2, archivePollMs },
  });
  let stopped = false;
  cleanup.add(() => (stopped ? undefined : t.stop()));
  const stop = async () => {
    stopped = true;
    await t.stop();
  };
  return { t, clock, receiver, open, cleanup, stop };
}

const job = async (t: TestFerry, id: string) => (await t.admin('GET', `/replay-jobs/${id}`)).json;

/** Makes and stores a pending deletion request's plan, and stops before its purge deletes anything (the request stays pending). */
async function planOnly(t: TestFerry, id: string): Promise<void> {
  const stopped = new AbortController();
  stopped.abort();
  const reg = await t.ferry.store.executeRegulation({ id, nowMs: 0, noticesFor: () => [], signal: stopped.signal });
  assert.equal(reg.status, 'pending');
}

for (const backend of backends) {
  describe(`replay from the archive on ${backend.name}`, () => {
    test('a destination added later gets the stored events of the range once, with their messageIds, filter and field removal applied; a deleted user gets nothing', async (ctx) => {
      const { t, clock, receiver } = await setUp(backend, (fn) => ctx.after(fn));
      const batch = [track(1), track(2), track(3, 'gone'), { type: 'identify', anonymousId: 'anon-of-gone', traits: {}, messageId: 'k4' }, track(5)];
      assert.equal((await t.send('/v1/batch', { batch: [...batch, { ...track(6), event: 'Noise' }] })).status, 200);
      clock.advance(hourMs);
      assert.equal((await t.send('/v1/batch', { batch: [track(7)] })).status, 200, 'after the range');
      // A deletion request stored and not yet carried out: its user's events are being deleted.
      await t.ferry.store.createRegulation({ id: 'reg_pending', userIds: ['gone', 'anon-of-gone'], sourceIds: null, nowMs: clock.now() });
      await planOnly(t, 'reg_pending');

      const late = webhooksDestination('late', [receiver.url], { filter: { drop: { event: 'Noise' } }, removeFields: ['properties.email'] });
      assert.equal((await t.admin('POST', '/destinations', late)).status, 201);
      const range = { destinationId: 'late', since: isoAt(T0 - hourMs), until: isoAt(T0 + 1) };
      const dry = await t.admin('POST', '/replays', { ...range, dryRun: true });
      assert.deepEqual([dry.status, dry.json], [200, { dryRun: true, wouldReplay: 4 }], 'k1, k2, k5 and k6 (the filter applies as the job runs)');

      const started = await t.admin('POST', '/replays', range);
      assert.equal(started.status, 202, JSON.stringify(started.json));
      assert.equal(started.json.job.kind, 'archive');
      assert.deepEqual(started.json.job.filter, { destinationId: 'late', sourceIds: ['app'], since: range.since, until: range.until });
      // Batches of 2 wait for the destination's backlog: the worker sends, the clock moves, the job goes on.
      await eventually(async () => {
        await t.idle();
        clock.advance(pollMs);
        return (await job(t, started.json.job.id)).status === 'done';
      }, 'the archive job to end');
      await t.idle();
      const ended = await job(t, started.json.job.id);
      assert.deepEqual([ended.total, ended.replayed, ended.skipped], [4, 3, 3], 'k6 filtered; k3 and k4 of the user being deleted');
      const sent = receiver.requests.map((r) => r.json);
      assert.deepEqual(sent.map((m) => m.messageId).sort(), ['k1', 'k2', 'k5']);
      assert.ok(
        sent.every((m) => m.properties.email === undefined && typeof m.properties.n === 'number'),
        'the destination removes properties.email',
      );

      // Asked again, only k6 is left, which has no delivery because the filter dropped it
      // (a dry run does not apply the filter); a second job sends nothing.
      const again = await t.admin('POST', '/replays', { ...range, dryRun: true });
      assert.equal(again.json.wouldReplay, 1);
      const second = (await t.admin('POST', '/replays', range)).json.job;
      await eventually(async () => (await job(t, second.id)).status === 'done', 'the second job to end');
      assert.deepEqual(
        [(await job(t, second.id)).replayed, (await job(t, second.id)).skipped],
        [0, 6],
        'k1, k2 and k5 already had, k6 again, and the events of the user being deleted',
      );
      await t.idle();
      assert.equal(receiver.requests.length, 3);
    });

    test('while a pending deletion request in scope has no plan, the job waits: the anonymous events of its user before an identify are never sent', async (ctx) => {
      const { t, clock, receiver } = await setUp(backend, (fn) => ctx.after(fn));
      const batch = [
        { type: 'track', anonymousId: 'anon-1', event: 'E', properties: {}, messageId: 'before-identify' },
        { type: 'identify', userId: 'gone', anonymousId: 'anon-1', traits: {}, messageId: 'identify' },
        track(3),
      ];
      assert.equal((await t.send('/v1/batch', { batch })).status, 200);
      await t.ferry.store.createRegulation({ id: 'reg_unplanned', userIds: ['gone'], sourceIds: ['app'], nowMs: clock.now() });
      assert.equal((await t.admin('POST', '/destinations', webhooksDestination('late', [receiver.url]))).status, 201);
      const id = (await t.admin('POST', '/replays', { destinationId: 'late', since: isoAt(T0) })).json.job.id;
      for (let i = 0; i < 3; i++) {
        clock.advance(pollMs);
        const held = await t.ferry.store.archiveReplayBatch({ id, limit: 2, nowMs: clock.now(), backlogLimit: 2, render: () => 'unused' });
        assert.deepEqual([held.held, held.job?.replayed, held.job?.skipped], [true, 0, 0]);
      }
      await planOnly(t, 'reg_unplanned');
      await eventually(async () => {
        await t.idle();
        clock.advance(pollMs);
        return (await job(t, id)).status === 'done';
      }, 'the job to end once the plan is made');
      await t.idle();
      assert.deepEqual(
        receiver.requests.map((r) => r.json.messageId),
        ['k3'],
        'the anonymous event linked by the plan is left out',
      );
      assert.deepEqual([(await job(t, id)).replayed, (await job(t, id)).skipped], [1, 2]);
    });

    test('a store unavailable for a while is waited out, and an event that cannot be rendered is skipped: neither fails the job', async (ctx) => {
      let failuresLeft = 2;
      // The real store, whose batches fail twice as an unavailable database does, and which
      // hands the renderer k2 as stored JSON that does not parse.
      const flaky = (store: Store): Store =>
        new Proxy(store, {
          get(target, prop, receiver) {
            if (prop !== 'archiveReplayBatch') return Reflect.get(target, prop, receiver);
            return async (args: Parameters<Store['archiveReplayBatch']>[0]) => {
              if (failuresLeft > 0) {
                failuresLeft--;
                throw Object.assign(new Error('unavailable'), { code: backend.name === 'sqlite' ? 'SQLITE_BUSY' : 'ECONNRESET' });
              }
              return target.archiveReplayBatch({ ...args, render: (e) => args.render(e.messageId === 'k2' ? { ...e, json: '{not json' } : e) });
            };
          },
        });
      const { t, clock, receiver } = await setUp(backend, (fn) => ctx.after(fn), [], flaky);
      assert.equal((await t.send('/v1/batch', { batch: [1, 2, 3].map((n) => track(n)) })).status, 200);
      assert.equal((await t.admin('POST', '/destinations', webhooksDestination('late', [receiver.url]))).status, 201);
      const id = (await t.admin('POST', '/replays', { destinationId: 'late', since: isoAt(T0) })).json.job.id;
      await eventually(async () => {
        await t.idle();
        clock.advance(pollMs);
        const status = (await job(t, id)).status;
        assert.notEqual(status, 'failed');
        return status === 'done';
      }, 'the job to end');
      await t.idle();
      assert.equal(failuresLeft, 0);
      const ended = await job(t, id);
      assert.deepEqual([ended.replayed, ended.skipped], [2, 1]);
      assert.deepEqual(receiver.requests.map((r) => r.json.messageId).sort(), ['k1', 'k3']);
    });

    test('an event this node has no route for holds the batch, nothing done and the cursor kept; it is not skipped', async (ctx) => {
      const { t, clock } = await setUp(backend, (fn) => ctx.after(fn));
      assert.equal((await t.send('/v1/batch', { batch: [1, 2, 3].map((n) => track(n)) })).status, 200);
      assert.equal((await t.admin('POST', '/destinations', webhooksDestination('late', ['http://127.0.0.1:9/x']))).status, 201);
      await t.ferry.replayJobs.stop();
      const id = (await t.admin('POST', '/replays', { destinationId: 'late', since: isoAt(T0) })).json.job.id;
      const ask = (render: Parameters<Store['archiveReplayBatch']>[0]['render']) =>
        t.ferry.store.archiveReplayBatch({ id, limit: 3, nowMs: clock.now(), backlogLimit: 100, render });
      const held = await ask((e) => (e.messageId === 'k2' ? unrouted : e.json));
      assert.deepEqual([held.held, held.queued, held.job?.replayed, held.job?.skipped], [true, 0, 0, 0]);
      const next = await ask((e) => e.json);
      assert.deepEqual([next.held, next.queued, next.job?.replayed, next.job?.skipped], [false, 3, 3, 0], 'the same events, from the same cursor');
    });

    if (backend.name === 'postgres')
      test('a node whose catalogue does not know a route yet reads it again and sends, rather than skipping', async (ctx) => {
        const { t, clock, receiver, open, cleanup } = await setUp(backend, (fn) => ctx.after(fn));
        assert.equal((await t.admin('POST', '/destinations', webhooksDestination('late', [receiver.url]))).status, 201);
        const other = await startFerry(testConfig([]), { clock, deliver: false, store: await open(), replay: { archiveBatchSize: 2, archivePollMs: pollMs } });
        cleanup.add(() => other.stop());
        assert.equal((await t.send('/v1/batch', { batch: [track(1)] }, { writeKey: 'other-write-key' })).status, 200, 'not routed to late yet');
        // Routed from `other` too, on the first node only: the second node's catalogue is behind.
        const routed = await t.admin('PUT', '/destinations/late', webhooksDestination('late', [receiver.url], { sources: ['app', 'other'] }));
        assert.equal(routed.status, 200, JSON.stringify(routed.json));
        await t.ferry.replayJobs.stop();
        const id = (await t.admin('POST', '/replays', { destinationId: 'late', since: isoAt(T0), sourceIds: ['other'] })).json.job.id;
        await other.ferry.replayJobs.resumeRunning();
        await eventually(async () => {
          await Promise.all([t.idle(), other.idle()]);
          clock.advance(pollMs);
          return (await job(other, id)).status === 'done';
        }, 'the job to end on the second node');
        const ended = await job(other, id);
        assert.deepEqual([ended.replayed, ended.skipped], [1, 0]);
      });

    test('a range already sent is walked a batch at a time: each batch reads at most its limit of events and counts those already had as skipped', async (ctx) => {
      const { t, clock, receiver } = await setUp(backend, (fn) => ctx.after(fn));
      assert.equal((await t.send('/v1/batch', { batch: [1, 2, 3, 4, 5].map((n) => track(n)) })).status, 200);
      assert.equal((await t.admin('POST', '/destinations', webhooksDestination('late', [receiver.url]))).status, 201);
      const range = { destinationId: 'late', since: isoAt(T0) };
      const first = (await t.admin('POST', '/replays', range)).json.job.id;
      await eventually(async () => {
        await t.idle();
        clock.advance(pollMs);
        return (await job(t, first)).status === 'done';
      }, 'the first job to end');
      await t.ferry.replayJobs.stop();
      const again = (await t.admin('POST', '/replays', range)).json.job.id;
      const ask = () => t.ferry.store.archiveReplayBatch({ id: again, limit: 2, nowMs: clock.now(), backlogLimit: 100, render: (e) => e.json });
      const steps = [];
      for (let i = 0; i < 3; i++) {
        const step = await ask();
        steps.push([step.queued, step.job?.skipped, step.job?.status]);
      }
      assert.deepEqual(steps, [
        [0, 2, 'running'],
        [0, 4, 'running'],
        [0, 5, 'done'],
      ]);
    });

    test('a job stopped between batches is carried on by the next start, each event sent once', async (ctx) => {
      const { t, clock, receiver, open, cleanup, stop } = await setUp(backend, (fn) => ctx.after(fn));
      const batch = [1, 2, 3, 4, 5].map((n) => track(n));
      assert.equal((await t.send('/v1/batch', { batch })).status, 200);
      assert.equal((await t.admin('POST', '/destinations', webhooksDestination('late', [receiver.url]))).status, 201);
      const id = (await t.admin('POST', '/replays', { destinationId: 'late', since: isoAt(T0) })).json.job.id;
      await eventually(async () => (await job(t, id)).replayed === 2, 'the first batch');
      await stop();

      const second = await startFerry(testConfig([]), { clock, deliver: false, store: await open(), replay: { archiveBatchSize: 2, archivePollMs: pollMs } });
      cleanup.add(() => second.stop());
      await eventually(async () => {
        await second.idle();
        clock.advance(pollMs);
        return (await job(second, id)).status === 'done';
      }, 'the resumed job to end');
      await second.idle();
      const ended = await job(second, id);
      assert.deepEqual([ended.status, ended.total, ended.replayed], ['done', 5, 5]);
      assert.deepEqual(receiver.requests.map((r) => r.json.messageId).sort(), ['k1', 'k2', 'k3', 'k4', 'k5']);
    });

    test('pacing: a batch waits while the destination has a backlog, and goes once live deliveries are sent', async (ctx) => {
      const { t, clock, receiver } = await setUp(backend, (fn) => ctx.after(fn), []);
      assert.equal((await t.send('/v1/batch', { batch: [1, 2, 3, 4, 5].map((n) => track(n)) })).status, 200);
      assert.equal((await t.admin('POST', '/destinations', webhooksDestination('late', [receiver.url]))).status, 201);
      // Live traffic: two calls routed to `late` now, pending, as the backlog of batches of 2.
      clock.advance(1000);
      assert.equal((await t.send('/v1/batch', { batch: [track(8), track(9)] })).status, 200);
      const id = (await t.admin('POST', '/replays', { destinationId: 'late', since: isoAt(T0), until: isoAt(T0 + 1) })).json.job.id;

      // Held however often it looks: the two live deliveries are still pending.
      for (let i = 0; i < 3; i++) {
        clock.advance(pollMs);
        const held = await t.ferry.store.archiveReplayBatch({ id, limit: 2, nowMs: clock.now(), backlogLimit: 2, render: () => 'unused' });
        assert.equal(held.held, true);
        assert.equal(held.job?.replayed, 0);
      }
      assert.equal((await job(t, id)).replayed, 0);
      // The live deliveries go first; then the replay fills the idle capacity.
      await t.idle();
      assert.deepEqual(
        receiver.requests.slice(0, 2).map((r) => r.json.messageId),
        ['k8', 'k9'],
      );
      await eventually(async () => {
        clock.advance(pollMs);
        return (await job(t, id)).replayed >= 2;
      }, 'the first batch once the backlog drained');
      await eventually(async () => {
        await t.idle();
        clock.advance(pollMs);
        return (await job(t, id)).status === 'done';
      }, 'the job to end');
      await t.idle();
      assert.deepEqual(
        receiver.requests
          .map((r) => r.json.messageId)
          .slice(2)
          .sort(),
        ['k1', 'k2', 'k3', 'k4', 'k5'],
      );
    });

    test('ratePerSecond: batches of at most that many events, each followed by a wait of n / rate seconds on the clock', async (ctx) => {
      // A poll of its own length (no other timer of the server has it), so that the rate's second cannot be a poll's.
      const slowPollMs = 3_700;
      const { t, clock, receiver } = await setUp(backend, (fn) => ctx.after(fn), [], undefined, slowPollMs);
      assert.equal((await t.send('/v1/batch', { batch: [1, 2, 3].map((n) => track(n)) })).status, 200);
      assert.equal((await t.admin('POST', '/destinations', webhooksDestination('late', [receiver.url]))).status, 201);
      const id = (await t.admin('POST', '/replays', { destinationId: 'late', since: isoAt(T0), ratePerSecond: 1 })).json.job.id;
      // Each batch, of one event, is followed by a sleep on the clock until exactly a second after
      // it: its timer is seen waiting, and a millisecond short of it the job still sleeps on it.
      for (const n of [1, 2, 3]) {
        const batchAtMs = clock.now();
        await eventually(
          async () => (await job(t, id)).replayed === n && clock.pendingTimers().includes(batchAtMs + 1000),
          `batch ${n}, then a sleep until a second after it`,
        );
        // The worker sends the batch's delivery, so that the destination's backlog does not hold the next.
        await t.idle();
        assert.ok(!clock.pendingTimers().includes(batchAtMs + slowPollMs), `after batch ${n}, the job waits on the rate, not on a poll`);
        clock.advance(999);
        assert.ok(clock.pendingTimers().includes(batchAtMs + 1000), `a millisecond short of a second after batch ${n}, the job still sleeps`);
        assert.equal((await job(t, id)).replayed, n);
        clock.advance(1);
      }
      await eventually(async () => (await job(t, id)).status === 'done', 'the job to end, a second after its last event');
      assert.deepEqual(
        receiver.requests.map((r) => r.json.messageId),
        ['k1', 'k2', 'k3'],
      );
    });

    test('cancel stops a job after its batch under way, keeps what it queued, is idempotent and audited', async (ctx) => {
      const { t, receiver } = await setUp(backend, (fn) => ctx.after(fn));
      assert.equal((await t.send('/v1/batch', { batch: [1, 2, 3, 4, 5].map((n) => track(n)) })).status, 200);
      assert.equal((await t.admin('POST', '/destinations', webhooksDestination('late', [receiver.url]))).status, 201);
      const id = (await t.admin('POST', '/replays', { destinationId: 'late', since: isoAt(T0), ratePerSecond: 50 })).json.job.id;
      await eventually(async () => (await job(t, id)).replayed === 2, 'the first batch');
      const cancelled = await t.admin('POST', `/replay-jobs/${id}/cancel`);
      assert.equal(cancelled.status, 200);
      assert.equal(cancelled.json.status, 'cancelled');
      assert.match(cancelled.json.finishedAt, /Z$/);
      assert.deepEqual((await t.admin('POST', `/replay-jobs/${id}/cancel`)).json, cancelled.json, 'a second cancel changes nothing');
      await within(30_000, 'the cancelled job to stop', t.ferry.replayJobs.idle());
      assert.equal((await job(t, id)).replayed, 2);
      assert.equal((await t.admin('GET', '/destinations/late/stats')).json.pending, 2, "the backlog's counts include what the job queued");
      await t.idle();
      assert.equal(receiver.requests.length, 2, 'what it queued before the cancel is sent');
      const audit = (await t.admin('GET', '/audit')).json.entries.find((e: any) => e.action === 'replay-job.cancel');
      assert.deepEqual([audit.object, audit.status], [{ kind: 'replay-job', id }, 200]);
      assert.equal((await t.admin('POST', '/replay-jobs/rpl_nope/cancel')).status, 404);
      const listed = (await t.admin('GET', '/replay-jobs')).json.jobs;
      assert.deepEqual(
        listed.map((j: any) => [j.id, j.kind, j.status]),
        [[id, 'archive', 'cancelled']],
      );
    });

    test('cancel stops a dead-letter replay job too: no batch replays anything after it', async (ctx) => {
      const { t, clock, receiver } = await setUp(backend, (fn) => ctx.after(fn));
      receiver.reply({ status: 400 });
      assert.equal((await t.admin('POST', '/destinations', webhooksDestination('hooks', [receiver.url]))).status, 201);
      assert.equal((await t.send('/v1/batch', { batch: [1, 2, 3, 4, 5].map((n) => track(n)) })).status, 200);
      await t.idle();
      assert.equal((await t.admin('GET', '/dead-letters')).json.deliveries.length, 5);
      // No batch runs on this node: the job waits in the store, as on a node that died.
      await t.ferry.replayJobs.stop();
      const submitted = await t.admin('POST', '/dead-letters/replay', { destinationId: 'hooks' });
      const id = submitted.json.job.id;
      assert.equal(submitted.json.job.kind, 'dead_letters');
      const cancelled = await t.admin('POST', `/replay-jobs/${id}/cancel`);
      assert.deepEqual([cancelled.json.kind, cancelled.json.status, cancelled.json.replayed], ['dead_letters', 'cancelled', 0]);
      const after = await t.ferry.store.replayJobBatch({ id, limit: 2, nowMs: clock.now(), destinationIdsIn: ['hooks'] });
      assert.deepEqual([after?.status, after?.replayed], ['cancelled', 0]);
      assert.equal((await t.admin('GET', '/dead-letters')).json.deliveries.length, 5, 'still dead');
    });

    if (backend.name === 'postgres')
      test('two nodes carry one job on together, taking turns: each event is sent once', async (ctx) => {
        const { t, clock, receiver, open, cleanup } = await setUp(backend, (fn) => ctx.after(fn));
        const other = await startFerry(testConfig([]), {
          clock,
          deliver: false,
          store: await open(),
          replay: { archiveBatchSize: 2, archivePollMs: pollMs },
        });
        cleanup.add(() => other.stop());
        const batch = Array.from({ length: 9 }, (_, i) => track(i + 1));
        assert.equal((await t.send('/v1/batch', { batch })).status, 200);
        assert.equal((await t.admin('POST', '/destinations', webhooksDestination('late', [receiver.url]))).status, 201);
        const id = (await t.admin('POST', '/replays', { destinationId: 'late', since: isoAt(T0) })).json.job.id;
        // As the sweep of running jobs does, on a node whose catalogue has not seen `late` yet.
        await other.ferry.replayJobs.resumeRunning();
        await eventually(async () => {
          await Promise.all([t.idle(), other.idle()]);
          clock.advance(pollMs);
          return (await job(t, id)).status === 'done';
        }, 'the job carried on by both nodes to end');
        await Promise.all([t.idle(), other.idle()]);
        const ended = await job(other, id);
        assert.deepEqual([ended.status, ended.replayed], ['done', 9]);
        const sent = receiver.requests.map((r) => r.json.messageId).sort();
        assert.deepEqual(sent, [...new Set(sent)], 'no event sent twice');
        assert.equal(sent.length, 9);
      });

    if (backend.name === 'postgres')
      test('ratePerSecond holds for the cluster: a second node asking for a batch before n / rate seconds is held', async (ctx) => {
        const { t, clock, open, cleanup } = await setUp(backend, (fn) => ctx.after(fn));
        const other = await open();
        cleanup.add(() => other.close());
        assert.equal((await t.send('/v1/batch', { batch: [1, 2, 3].map((n) => track(n)) })).status, 200);
        assert.equal((await t.admin('POST', '/destinations', webhooksDestination('late', ['http://127.0.0.1:9/x']))).status, 201);
        // Batches are asked for by hand, by each node, as their runners would.
        await t.ferry.replayJobs.stop();
        const id = (await t.admin('POST', '/replays', { destinationId: 'late', since: isoAt(T0), ratePerSecond: 1 })).json.job.id;
        const ask = (store: Store) => store.archiveReplayBatch({ id, limit: 1, nowMs: clock.now(), backlogLimit: 100, render: (e) => e.json });
        const first = await ask(t.ferry.store);
        assert.deepEqual([first.held, first.queued, first.nextBatchAtMs], [false, 1, T0 + 1000]);
        const early = await ask(other);
        assert.deepEqual([early.held, early.queued, early.nextBatchAtMs], [true, 0, T0 + 1000], 'the other node waits for the same second');
        clock.advance(999);
        assert.equal((await ask(t.ferry.store)).held, true);
        clock.advance(1);
        const second = await ask(other);
        assert.deepEqual([second.held, second.queued, second.job?.replayed], [false, 1, 2]);
        assert.equal((await ask(t.ferry.store)).held, true, 'and the first node waits for the next second');
      });

    test('backfill: a destination created with "backfill the last N days" gets them; backfill is not stored', async (ctx) => {
      const { t, clock, receiver } = await setUp(backend, (fn) => ctx.after(fn));
      clock.set(T0 - 3 * dayMs);
      assert.equal((await t.send('/v1/batch', { batch: [track(1)] })).status, 200, 'older than the backfill');
      clock.set(T0);
      assert.equal((await t.send('/v1/batch', { batch: [track(2), track(3)] })).status, 200);
      const created = await t.admin('POST', '/destinations', { ...webhooksDestination('late', [receiver.url]), backfill: { days: 2 } });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      assert.equal(created.json.id, 'late');
      const backfill = created.json.backfillJob;
      assert.deepEqual([backfill.kind, backfill.status, backfill.total], ['archive', 'running', 2]);
      assert.deepEqual(backfill.filter, { destinationId: 'late', sourceIds: ['app'], since: isoAt(T0 - 2 * dayMs), until: isoAt(T0 + 1) });
      assert.equal((await t.admin('GET', '/destinations/late')).json.backfill, undefined);
      await eventually(async () => {
        await t.idle();
        clock.advance(pollMs);
        return (await job(t, backfill.id)).status === 'done';
      }, 'the backfill to end');
      await t.idle();
      assert.deepEqual(receiver.requests.map((r) => r.json.messageId).sort(), ['k2', 'k3']);

      const [bad, unknownKey, disabled] = [
        await t.admin('POST', '/destinations', { ...webhooksDestination('b1', [receiver.url]), backfill: { days: 0 } }),
        await t.admin('POST', '/destinations', { ...webhooksDestination('b2', [receiver.url]), backfill: { days: 1, hours: 2 } }),
        await t.admin('POST', '/destinations', { ...webhooksDestination('b3', [receiver.url], { enabled: false }), backfill: { days: 1 } }),
      ];
      assert.deepEqual([bad.status, bad.json.errors[0].code, bad.json.errors[0].path], [400, 'bad_request', 'backfill.days']);
      assert.deepEqual([unknownKey.status, unknownKey.json.errors[0].code], [400, 'unknown_parameter']);
      assert.deepEqual([disabled.status, disabled.json.errors[0].code], [409, 'destination_disabled']);
      const ids = (await t.admin('GET', '/destinations')).json.destinations.map((d: any) => d.id);
      assert.deepEqual(ids, ['late'], 'a refused backfill creates nothing');
    });

    test('backfill: a destination created whose backfill cannot start is still created, answered 201 with backfillError', async (ctx) => {
      let failNext = true;
      const failing = (store: Store): Store =>
        new Proxy(store, {
          get(target, prop, receiver) {
            if (prop !== 'createArchiveJob' || !failNext) return Reflect.get(target, prop, receiver);
            return async () => {
              failNext = false;
              throw Object.assign(new Error('unavailable'), { code: backend.name === 'sqlite' ? 'SQLITE_BUSY' : 'ECONNRESET' });
            };
          },
        });
      const { t, receiver } = await setUp(backend, (fn) => ctx.after(fn), [], failing);
      assert.equal((await t.send('/v1/batch', { batch: [track(1)] })).status, 200);
      const created = await t.admin('POST', '/destinations', { ...webhooksDestination('late', [receiver.url]), backfill: { days: 1 } });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      assert.equal(created.json.backfillJob, undefined);
      assert.equal(created.json.backfillError.code, 'store_unavailable');
      assert.equal(typeof created.json.backfillError.message, 'string');
      assert.equal((await t.admin('GET', '/destinations/late')).status, 200);
      const started = await t.admin('POST', '/replays', { destinationId: 'late', since: isoAt(T0 - dayMs) });
      assert.equal(started.status, 202, 'the caller starts it itself');
    });

    test('a malformed request is a 400 naming the field, an unknown id a 404, a disabled destination a 409', async (ctx) => {
      const { t } = await setUp(backend, (fn) => ctx.after(fn), [
        webhooksDestination('on', ['http://127.0.0.1:9/x']),
        webhooksDestination('off', ['http://127.0.0.1:9/x'], { enabled: false }),
      ]);
      const since = isoAt(T0 - hourMs);
      const cases: [unknown, number, string, string | undefined][] = [
        [{ destinationId: 'on', since, color: 'red' }, 400, 'unknown_parameter', 'color'],
        [{ since }, 400, 'bad_request', 'destinationId'],
        [{ destinationId: 'on' }, 400, 'bad_request', 'since'],
        [{ destinationId: 'on', since: 'yesterday' }, 400, 'bad_request', 'since'],
        [{ destinationId: 'on', since, until: since }, 400, 'bad_request', 'until'],
        [{ destinationId: 'on', since, ratePerSecond: 0 }, 400, 'bad_request', 'ratePerSecond'],
        [{ destinationId: 'on', since, dryRun: 'yes' }, 400, 'bad_request', 'dryRun'],
        [{ destinationId: 'on', since, sourceIds: [] }, 400, 'bad_request', 'sourceIds'],
        [{ destinationId: 'on', since, sourceIds: ['other'] }, 400, 'bad_request', 'sourceIds[0]'],
        [{ destinationId: 'on', since, sourceIds: ['app', 'nope'] }, 404, 'not_found', 'sourceIds[1]'],
        [{ destinationId: 'nope', since }, 404, 'not_found', 'destinationId'],
        [{ destinationId: 'off', since }, 409, 'destination_disabled', 'destinationId'],
      ];
      for (const [body, status, code, path] of cases) {
        const answer = await t.admin('POST', '/replays', body);
        assert.deepEqual([answer.status, answer.json.errors[0].code, answer.json.errors[0].path], [status, code, path], JSON.stringify(body));
      }
      assert.deepEqual((await t.admin('GET', '/replay-jobs')).json.jobs, []);
      const dry = await t.admin('POST', '/replays', { destinationId: 'off', since, dryRun: true });
      assert.deepEqual(dry.json, { dryRun: true, wouldReplay: 0 }, 'a dry run counts for a disabled destination too');
    });
  });
}
