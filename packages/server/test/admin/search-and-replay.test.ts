import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { ManualClock } from '../../src/util/clock.js';
import { startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { freshSchema, stopPostgres } from '../helpers/postgres.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { within } from '../helpers/within.js';

after(() => stopPostgres());

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const hourMs = 3_600_000;
const isoAt = (ms: number) => new Date(ms).toISOString();

/**
 * Each backend makes a place for a store and opens stores on it: opened again after a stop,
 * a store finds what the one before it left (a restart).
 */
const backends: { name: string; place: (onCleanup: (fn: () => Promise<void> | void) => void, clock: ManualClock) => Promise<() => Promise<Store>> }[] = [
  {
    name: 'sqlite',
    place: async (onCleanup, clock) => {
      const dir = mkdtempSync(join(tmpdir(), 'ferry-search-'));
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

/** Cleanups run last-registered first, in a describe's `after`. */
function cleanupStack() {
  const stack: (() => Promise<void> | void)[] = [];
  return {
    add: (fn: () => Promise<void> | void) => void stack.push(fn),
    run: async () => {
      for (const fn of stack.reverse()) await fn();
    },
  };
}

const ids = (list: { messageId: string | null; destinationId: string }[]) => list.map((d) => `${d.messageId}>${d.destinationId}`);

for (const backend of backends) {
  describe(`delivery search on ${backend.name}`, () => {
    const clock = new ManualClock(T0);
    const cleanup = cleanupStack();
    let t: TestFerry;
    before(async () => {
      const open = await backend.place(cleanup.add, clock);
      const config = testConfig([
        webhooksDestination('hooks', ['http://127.0.0.1:9/unused'], { sources: ['app', 'other'] }),
        webhooksDestination('crm', ['http://127.0.0.1:9/unused']),
      ]);
      // No worker: every delivery stays pending, and nothing is sent anywhere.
      t = await startFerry(config, { store: await open(), clock, deliver: false });
      cleanup.add(() => t.stop());
      const batch = async (messages: unknown[], writeKey?: string) =>
        assert.equal((await t.send('/v1/batch', { batch: messages }, writeKey ? { writeKey } : {})).status, 200);
      await batch([
        { type: 'track', userId: 'u1', anonymousId: 'a1', event: 'Signed Up', messageId: 'm1' },
        { type: 'identify', userId: 'u1', anonymousId: 'a1', traits: { plan: 'pro' }, messageId: 'm2' },
        { type: 'track', userId: 'u2', anonymousId: 'a2', event: 'Order Completed', messageId: 'm3' },
      ]);
      clock.advance(hourMs);
      await batch([
        { type: 'track', userId: 'u1', event: 'Order Completed', messageId: 'm4' },
        { type: 'page', anonymousId: 'a3', name: 'Home', messageId: 'm5' },
      ]);
      clock.advance(hourMs);
      await batch([{ type: 'track', userId: 'u1', event: 'Signed Up', messageId: 'm6' }], 'other-write-key');
      // Two deletion notices, for a user whose events are elsewhere: they have a user id and no event.
      assert.equal((await t.admin('POST', '/regulations', { userIds: ['u9'], sourceIds: ['app'] })).status, 202);
      await t.deletionsDone();
    });
    after(() => cleanup.run());

    const search = async (query: string) => {
      const res = await t.admin('GET', `/deliveries?${query}`);
      assert.equal(res.status, 200, `${query}: ${JSON.stringify(res.json)}`);
      return res.json as { deliveries: any[]; next: string | null };
    };

    test('each filter alone finds exactly its deliveries, in id order', async () => {
      const cases: [string, string[]][] = [
        ['userId=u1', ['m1>hooks', 'm1>crm', 'm2>hooks', 'm2>crm', 'm4>hooks', 'm4>crm', 'm6>hooks']],
        ['anonymousId=a1', ['m1>hooks', 'm1>crm', 'm2>hooks', 'm2>crm']],
        ['event=Order%20Completed', ['m3>hooks', 'm3>crm', 'm4>hooks', 'm4>crm']],
        ['type=page', ['m5>hooks', 'm5>crm']],
        ['type=identify', ['m2>hooks', 'm2>crm']],
        ['destinationId=crm', ['m1>crm', 'm2>crm', 'm3>crm', 'm4>crm', 'm5>crm', 'null>crm']],
        ['sourceId=other', ['m6>hooks']],
        ['messageId=m3', ['m3>hooks', 'm3>crm']],
        ['status=succeeded', []],
      ];
      for (const [query, expected] of cases) {
        const found = (await search(query)).deliveries;
        assert.deepEqual(ids(found).sort(), [...expected].sort(), query);
        assert.deepEqual(
          found.map((d) => d.id),
          found.map((d) => d.id).sort((a, b) => a - b),
          `${query}: ascending ids`,
        );
      }
      const notices = (await search('type=delete')).deliveries;
      assert.deepEqual(
        notices.map((d) => [d.kind, d.userId, d.type, d.event, d.anonymousId, d.receivedAt]),
        [
          ['delete', 'u9', null, null, null, null],
          ['delete', 'u9', null, null, null, null],
        ],
      );
      assert.deepEqual(
        (await search('userId=u9')).deliveries.map((d) => d.kind),
        ['delete', 'delete'],
        'userId also finds what has no event',
      );
      assert.deepEqual((await search('type=audience')).deliveries, []);
    });

    test('a delivery shows its call type, event name, anonymous id and received-at time; so does one delivery read alone', async () => {
      const [m1] = (await search('messageId=m1&destinationId=hooks')).deliveries;
      assert.deepEqual([m1.type, m1.event, m1.anonymousId, m1.userId, m1.receivedAt], ['track', 'Signed Up', 'a1', 'u1', isoAt(T0)]);
      const alone = (await t.admin('GET', `/deliveries/${m1.id}`)).json;
      assert.deepEqual([alone.type, alone.event, alone.anonymousId, alone.receivedAt], ['track', 'Signed Up', 'a1', isoAt(T0)]);
      const [m5] = (await search('messageId=m5&destinationId=crm')).deliveries;
      assert.deepEqual([m5.type, m5.event, m5.anonymousId, m5.userId, m5.receivedAt], ['page', null, 'a3', null, isoAt(T0 + hourMs)]);
    });

    test('the received-at range: after is inclusive, before exclusive, any ISO 8601 offset', async () => {
      const cases: [string, string[]][] = [
        [`receivedAfter=${isoAt(T0 + hourMs)}`, ['m4>hooks', 'm4>crm', 'm5>hooks', 'm5>crm', 'm6>hooks']],
        [`receivedBefore=${isoAt(T0 + hourMs)}`, ['m1>hooks', 'm1>crm', 'm2>hooks', 'm2>crm', 'm3>hooks', 'm3>crm']],
        [`receivedAfter=2026-01-01T00:30:00Z&receivedBefore=2026-01-01T01:30:00Z`, ['m4>hooks', 'm4>crm', 'm5>hooks', 'm5>crm']],
        // 02:00 at +01:00 is 01:00 UTC.
        [`receivedAfter=${encodeURIComponent('2026-01-01T02:00:00+01:00')}&type=page`, ['m5>hooks', 'm5>crm']],
      ];
      for (const [query, expected] of cases) assert.deepEqual(ids((await search(query)).deliveries).sort(), [...expected].sort(), query);
    });

    test('filters combine with AND', async () => {
      assert.deepEqual(ids((await search('userId=u1&event=Signed%20Up&destinationId=hooks')).deliveries), ['m1>hooks', 'm6>hooks']);
      assert.deepEqual(ids((await search(`userId=u1&type=track&receivedBefore=${isoAt(T0 + 2 * hourMs)}&status=pending&sourceId=app`)).deliveries).sort(), [
        'm1>crm',
        'm1>hooks',
        'm4>crm',
        'm4>hooks',
      ]);
      assert.deepEqual((await search('anonymousId=a1&event=Order%20Completed')).deliveries, []);
    });

    test('pages follow one another through `next` until it is null, each delivery once', async () => {
      const seen: string[] = [];
      let query = 'userId=u1&limit=3';
      const sizes: number[] = [];
      for (let page = 0; page < 10; page += 1) {
        const { deliveries, next } = await search(query);
        sizes.push(deliveries.length);
        seen.push(...ids(deliveries));
        if (next === null) break;
        assert.equal(next, String(deliveries.at(-1).id));
        query = `userId=u1&limit=3&after=${next}`;
      }
      assert.deepEqual(sizes, [3, 3, 1]);
      assert.deepEqual(seen, ids((await search('userId=u1')).deliveries));
    });

    test('a malformed value is a 400 naming it; an unknown parameter a 400 unknown_parameter', async () => {
      const bad: [string, string][] = [
        ['type=purchase', 'type'],
        ['receivedAfter=yesterday', 'receivedAfter'],
        ['receivedBefore=2026-13-01T00:00:00Z', 'receivedBefore'],
        ['status=lost', 'status'],
        ['after=-1', 'after'],
        ['limit=0', 'limit'],
        ['userId=', 'userId'],
      ];
      for (const [query, path] of bad) {
        const res = await t.admin('GET', `/deliveries?${query}`);
        assert.equal(res.status, 400, query);
        assert.deepEqual([res.json.errors[0].code, res.json.errors[0].path], ['bad_request', path], query);
      }
      for (const path of ['/deliveries?event_name=x', '/dead-letters?status=dead', '/regulations?userId=u1', '/replay-jobs?status=done']) {
        const res = await t.admin('GET', path);
        assert.equal(res.status, 400, path);
        assert.equal(res.json.errors[0].code, 'unknown_parameter', path);
      }
      // The same filters on dead letters: none here, every delivery is pending.
      assert.deepEqual((await t.admin('GET', '/dead-letters?userId=u1&type=track')).json, { deliveries: [], next: null });
    });

    test('GET /stats lists the sources and destinations live in the store', async () => {
      const stats = (await t.admin('GET', '/stats')).json;
      assert.deepEqual(stats.sources, [
        { id: 'app', name: 'App' },
        { id: 'other', name: 'Other' },
      ]);
      assert.deepEqual(stats.destinations, [
        { id: 'crm', name: 'crm', type: 'Webhooks', enabled: true },
        { id: 'hooks', name: 'hooks', type: 'Webhooks', enabled: true },
      ]);
      assert.equal(stats.events, 6);
      assert.equal(stats.deliveries.pending, 13);
      const created = await t.admin('POST', '/destinations', { ...webhooksDestination('late', ['http://127.0.0.1:9/unused']), enabled: false });
      assert.equal(created.status, 201);
      assert.deepEqual(
        (await t.admin('GET', '/stats')).json.destinations.find((d: any) => d.id === 'late'),
        { id: 'late', name: 'late', type: 'Webhooks', enabled: false },
      );
    });
  });

  describe(`bulk replay on ${backend.name}`, () => {
    const clock = new ManualClock(T0);
    const cleanup = cleanupStack();
    let t: TestFerry;
    let receiver: TestReceiver;
    before(async () => {
      const open = await backend.place(cleanup.add, clock);
      // `hooks` refuses for good (HTTP 400: dead at once); `down` cannot be reached (retried until its window ends).
      receiver = await startReceiver({ status: 400 });
      cleanup.add(() => receiver.close());
      const config = testConfig([
        webhooksDestination('hooks', [receiver.url]),
        webhooksDestination('down', ['http://127.0.0.1:9/hook'], { circuitBreaker: { enabled: false } }),
      ]);
      t = await startFerry(config, { store: await open(), clock, deliver: false });
      cleanup.add(() => t.stop());
      const track = (n: number) => ({ type: 'track', userId: `u${n}`, event: 'E', messageId: `r${n}` });
      assert.equal((await t.send('/v1/batch', { batch: [1, 2, 3].map(track) })).status, 200);
      await t.idle();
      clock.advance(hourMs);
      assert.equal((await t.send('/v1/batch', { batch: [4, 5].map(track) })).status, 200);
      await t.idle();
      // Past every retry window of `down` (4 hours from each first attempt): its last attempts dead-letter them.
      clock.advance(5 * hourMs);
      await t.idle();
      const dead = (await t.admin('GET', '/dead-letters')).json.deliveries as any[];
      assert.equal(dead.length, 10, JSON.stringify(dead.map((d) => [d.messageId, d.destinationId, d.status])));
    });
    after(() => cleanup.run());

    const deadCount = async () => (await t.admin('GET', '/dead-letters?limit=1000')).json.deliveries.length;
    const replay = (body: unknown) => t.admin('POST', '/dead-letters/replay', body);

    test('dryRun answers how many would be replayed, by destination, time range and error class, and changes nothing', async () => {
      const cases: [Record<string, unknown>, number][] = [
        [{}, 10],
        [{ errorClass: 'http' }, 5],
        [{ errorClass: 'connect' }, 5],
        [{ errorClass: 'timeout' }, 0],
        [{ destinationId: 'hooks', since: isoAt(T0 + hourMs / 2) }, 2],
        [{ destinationId: 'hooks', until: isoAt(T0 + hourMs / 2) }, 3],
        [{ since: isoAt(T0), until: isoAt(T0 + hourMs) }, 3],
        [{ destinationId: 'down', errorClass: 'http' }, 0],
      ];
      for (const [body, wouldReplay] of cases) {
        const res = await replay({ ...body, dryRun: true });
        assert.equal(res.status, 200, JSON.stringify(body));
        assert.deepEqual(res.json, { dryRun: true, wouldReplay }, JSON.stringify(body));
      }
      assert.equal(await deadCount(), 10, 'nothing was replayed');
      assert.deepEqual((await t.admin('GET', '/replay-jobs')).json, { jobs: [], next: null });
    });

    test('dead letters are searched with the same filters as deliveries', async () => {
      const down = (await t.admin('GET', '/dead-letters?destinationId=down&limit=2')).json;
      assert.equal(down.deliveries.length, 2);
      assert.ok(down.deliveries.every((d: any) => d.deadReason === 'retry_window_exhausted' && /-> connect/.test(d.lastError)));
      const rest = (await t.admin('GET', `/dead-letters?destinationId=down&limit=2&after=${down.next}`)).json;
      assert.equal(rest.deliveries.length, 2);
      assert.deepEqual(
        (await t.admin('GET', `/dead-letters?userId=u4&receivedAfter=${isoAt(T0 + hourMs)}`)).json.deliveries.map((d: any) => d.destinationId).sort(),
        ['down', 'hooks'],
      );
    });

    test('dead letters are listed by error class and time of death with the filter of the bulk replay: the letters a dry run counts', async () => {
      const cases: [string, string[]][] = [
        ['errorClass=http', ['r1>hooks', 'r2>hooks', 'r3>hooks', 'r4>hooks', 'r5>hooks']],
        ['errorClass=connect', ['r1>down', 'r2>down', 'r3>down', 'r4>down', 'r5>down']],
        ['errorClass=timeout', []],
        [`destinationId=hooks&since=${isoAt(T0 + hourMs / 2)}`, ['r4>hooks', 'r5>hooks']],
        [`destinationId=hooks&until=${isoAt(T0 + hourMs / 2)}`, ['r1>hooks', 'r2>hooks', 'r3>hooks']],
        // since is inclusive, until exclusive; any ISO 8601 offset (01:00 at +01:00 is midnight UTC).
        [`since=${encodeURIComponent('2026-01-01T01:00:00+01:00')}&until=${isoAt(T0 + hourMs)}`, ['r1>hooks', 'r2>hooks', 'r3>hooks']],
        [`errorClass=http&userId=u4`, ['r4>hooks']],
      ];
      for (const [query, expected] of cases) {
        const listed = (await t.admin('GET', `/dead-letters?${query}`)).json.deliveries as any[];
        assert.deepEqual(ids(listed).sort(), [...expected].sort(), query);
        const filter = Object.fromEntries(new URLSearchParams(query));
        if (!('userId' in filter))
          assert.deepEqual((await replay({ ...filter, dryRun: true })).json.wouldReplay, listed.length, `${query}: as a dry run counts`);
      }
      const page1 = (await t.admin('GET', '/dead-letters?errorClass=connect&limit=3')).json;
      const page2 = (await t.admin('GET', `/dead-letters?errorClass=connect&limit=3&after=${page1.next}`)).json;
      assert.deepEqual([page1.deliveries.length, page2.deliveries.length, page2.next], [3, 2, null], 'pages of a filtered list');
      const bad: [string, string, string][] = [
        ['errorClass=nope', 'bad_request', 'errorClass'],
        ['since=yesterday', 'bad_request', 'since'],
        [`since=${isoAt(T0 + hourMs)}&until=${isoAt(T0)}`, 'bad_request', 'until'],
        ['diedAfter=2026-01-01T00:00:00Z', 'unknown_parameter', 'diedAfter'],
      ];
      for (const [query, code, path] of bad) {
        const res = await t.admin('GET', `/dead-letters?${query}`);
        assert.deepEqual([res.status, res.json.errors[0].code, res.json.errors[0].path ?? ''], [400, code, path], query);
      }
      for (const query of ['errorClass=http', `since=${isoAt(T0)}`]) {
        const res = await t.admin('GET', `/deliveries?${query}`);
        assert.deepEqual([res.status, res.json.errors[0].code], [400, 'unknown_parameter'], `${query}: a dead-letter filter only`);
      }
    });

    test('a replay by destination, time range and error class takes exactly those, at once', async () => {
      const res = await replay({ destinationId: 'hooks', since: isoAt(T0), until: isoAt(T0 + hourMs / 2), errorClass: 'http' });
      assert.deepEqual([res.status, res.json], [200, { replayed: 3 }]);
      const left = (await t.admin('GET', '/dead-letters?destinationId=hooks')).json.deliveries;
      assert.deepEqual(left.map((d: any) => d.messageId).sort(), ['r4', 'r5']);
      const replayed = (await t.admin('GET', '/deliveries?destinationId=hooks&status=pending')).json.deliveries;
      assert.deepEqual(
        replayed.map((d: any) => [d.messageId, d.attemptCount, d.firstAttemptAt]),
        [
          ['r1', 0, null],
          ['r2', 0, null],
          ['r3', 0, null],
        ],
      );
      assert.equal(await deadCount(), 7);
    });

    test('a malformed replay body is a 400 naming the field; nothing is replayed', async () => {
      const bad: [Record<string, unknown>, string, string][] = [
        [{ errorClass: 'nope' }, 'bad_request', 'errorClass'],
        [{ since: isoAt(T0 + hourMs), until: isoAt(T0) }, 'bad_request', 'until'],
        [{ until: 'tomorrow' }, 'bad_request', 'until'],
        [{ dryRun: 'yes' }, 'bad_request', 'dryRun'],
        [{ errorClasses: ['http'] }, 'unknown_parameter', 'errorClasses'],
      ];
      for (const [body, code, path] of bad) {
        const res = await replay(body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.deepEqual([res.json.errors[0].code, res.json.errors[0].path], [code, path], JSON.stringify(body));
      }
      assert.equal(await deadCount(), 7);
    });
  });

  describe(`replay jobs on ${backend.name}`, () => {
    test('a replay of more than the inline limit runs as a job whose progress can be read back', async (ctx) => {
      const cleanup = cleanupStack();
      ctx.after(() => cleanup.run());
      const clock = new ManualClock(T0);
      const open = await backend.place(cleanup.add, clock);
      const receiver = await startReceiver({ status: 400 });
      cleanup.add(() => receiver.close());
      const config = testConfig([webhooksDestination('hooks', [receiver.url])]);
      const t = await startFerry(config, { store: await open(), clock, deliver: false, replay: { inlineLimit: 2, batchSize: 2 } });
      cleanup.add(() => t.stop());
      const batch = [1, 2, 3, 4, 5].map((n) => ({ type: 'track', userId: `u${n}`, event: 'E', messageId: `j${n}` }));
      assert.equal((await t.send('/v1/batch', { batch })).status, 200);
      await t.idle();

      assert.deepEqual((await t.admin('POST', '/dead-letters/replay', { dryRun: true })).json, { dryRun: true, wouldReplay: 5 }, 'a dry run is never a job');
      clock.advance(1000);
      const submitted = await t.admin('POST', '/dead-letters/replay', { destinationId: 'hooks', errorClass: 'http' });
      assert.equal(submitted.status, 202);
      const job = submitted.json.job;
      assert.match(job.id, /^rpl_[0-9a-f]{32}$/);
      assert.deepEqual(
        { ...job, id: undefined },
        {
          id: undefined,
          kind: 'dead_letters',
          status: 'running',
          total: 5,
          replayed: 0,
          cursor: { afterId: 0 },
          createdAt: isoAt(T0 + 1000),
          finishedAt: null,
          error: null,
          filter: { destinationId: 'hooks', errorClass: 'http', until: isoAt(T0 + 1001) },
        },
      );
      await within(30_000, 'the replay job to end', t.ferry.replayJobs.idle());
      const done = (await t.admin('GET', `/replay-jobs/${job.id}`)).json;
      assert.deepEqual([done.status, done.replayed, done.total, done.finishedAt], ['done', 5, 5, isoAt(T0 + 1000)]);
      assert.deepEqual((await t.admin('GET', '/dead-letters')).json.deliveries, []);
      assert.equal((await t.admin('GET', '/deliveries?status=pending')).json.deliveries.length, 5);

      // Dead again; a small replay runs at once, beside the job listed.
      await t.idle();
      const two = (await t.admin('GET', '/dead-letters?limit=2')).json.deliveries.map((d: any) => d.id);
      assert.deepEqual((await t.admin('POST', '/dead-letters/replay', { ids: two })).json, { replayed: 2 });
      clock.advance(1000);
      const second = (await t.admin('POST', '/dead-letters/replay', { since: isoAt(T0) })).json.job;
      await within(30_000, 'the replay job to end', t.ferry.replayJobs.idle());
      const page1 = (await t.admin('GET', '/replay-jobs?limit=1')).json;
      assert.deepEqual(
        page1.jobs.map((j: any) => [j.id, j.status, j.replayed, j.total]),
        [[second.id, 'done', 3, 3]],
        'newest first',
      );
      const page2 = (await t.admin('GET', `/replay-jobs?limit=1&after=${page1.next}`)).json;
      assert.deepEqual(
        page2.jobs.map((j: any) => j.id),
        [job.id],
      );
      const page3 = (await t.admin('GET', `/replay-jobs?limit=1&after=${page2.next}`)).json;
      assert.deepEqual(page3, { jobs: [], next: null });
      assert.equal((await t.admin('GET', '/replay-jobs/rpl_nope')).status, 404);
      assert.equal((await t.admin('GET', '/replay-jobs?after=garbage')).json.errors[0].path, 'after');
    });

    if (backend.name === 'postgres')
      test('a job whose node died is carried on by a node already running, at its next sweep', async (ctx) => {
        const cleanup = cleanupStack();
        ctx.after(() => cleanup.run());
        const clock = new ManualClock(T0);
        const open = await backend.place(cleanup.add, clock);
        const receiver = await startReceiver({ status: 400 });
        cleanup.add(() => receiver.close());
        const config = testConfig([webhooksDestination('hooks', [receiver.url])]);
        const options = { clock, deliver: false, replay: { inlineLimit: 2, batchSize: 2, sweepMs: 30_000 } };
        const survivor = await startFerry(config, { ...options, store: await open() });
        cleanup.add(() => survivor.stop());
        const doomed = await startFerry(config, { ...options, store: await open() });
        let doomedStopped = false;
        cleanup.add(() => (doomedStopped ? undefined : doomed.stop()));
        const batch = [1, 2, 3].map((n) => ({ type: 'track', userId: `u${n}`, event: 'E', messageId: `s${n}` }));
        assert.equal((await doomed.send('/v1/batch', { batch })).status, 200);
        await doomed.idle();
        // The doomed node takes the job and runs none of it, as one that died at once would.
        await doomed.ferry.replayJobs.stop();
        const job = (await doomed.admin('POST', '/dead-letters/replay', { destinationId: 'hooks' })).json.job;
        await doomed.stop();
        doomedStopped = true;
        assert.equal((await survivor.admin('GET', `/replay-jobs/${job.id}`)).json.status, 'running');

        // Nothing happens before the sweep is due; then the survivor takes the job up.
        clock.advance(29_999);
        await survivor.ferry.replayJobs.idle();
        assert.equal((await survivor.admin('GET', `/replay-jobs/${job.id}`)).json.status, 'running');
        clock.advance(1);
        let done = (await survivor.admin('GET', `/replay-jobs/${job.id}`)).json;
        // The sweep's store read and the batches are asynchronous: wait for the job's end, bounded.
        for (let i = 0; i < 500 && done.status === 'running'; i++) {
          await new Promise((r) => setTimeout(r, 10));
          await survivor.ferry.replayJobs.idle();
          done = (await survivor.admin('GET', `/replay-jobs/${job.id}`)).json;
        }
        assert.deepEqual([done.status, done.replayed, done.total], ['done', 3, 3]);
      });

    test('a job left running by a stop is carried on from its progress by the next start', async (ctx) => {
      const cleanup = cleanupStack();
      ctx.after(() => cleanup.run());
      const clock = new ManualClock(T0);
      const open = await backend.place(cleanup.add, clock);
      const receiver = await startReceiver({ status: 400 });
      cleanup.add(() => receiver.close());
      const config = testConfig([webhooksDestination('hooks', [receiver.url])]);
      const options = { clock, deliver: false, replay: { inlineLimit: 2, batchSize: 2 } };
      const first = await startFerry(config, { ...options, store: await open() });
      let firstStopped = false;
      cleanup.add(() => (firstStopped ? undefined : first.stop()));
      const batch = [1, 2, 3, 4, 5].map((n) => ({ type: 'track', userId: `u${n}`, event: 'E', messageId: `k${n}` }));
      assert.equal((await first.send('/v1/batch', { batch })).status, 200);
      await first.idle();

      // This node runs no batch: the job waits in the store as a crash mid-job would leave it.
      await first.ferry.replayJobs.stop();
      const job = (await first.admin('POST', '/dead-letters/replay', { destinationId: 'hooks' })).json.job;
      assert.equal(job.status, 'running');
      // One batch, as a node that then died would have run it.
      await first.ferry.store.replayJobBatch({ id: job.id, limit: 2, nowMs: clock.now(), destinationIdsIn: ['hooks'] });
      const midway = (await first.admin('GET', `/replay-jobs/${job.id}`)).json;
      assert.deepEqual([midway.status, midway.replayed, midway.total], ['running', 2, 5]);
      assert.equal((await first.admin('GET', '/dead-letters')).json.deliveries.length, 3);
      await first.stop();
      firstStopped = true;

      const second = await startFerry(config, { ...options, store: await open() });
      cleanup.add(() => second.stop());
      await within(30_000, 'the resumed replay job to end', second.ferry.replayJobs.idle());
      const done = (await second.admin('GET', `/replay-jobs/${job.id}`)).json;
      assert.deepEqual([done.status, done.replayed, done.total], ['done', 5, 5]);
      assert.deepEqual((await second.admin('GET', '/dead-letters')).json.deliveries, []);
      const pending = (await second.admin('GET', '/deliveries?status=pending')).json.deliveries;
      assert.deepEqual(
        pending.map((d: any) => d.messageId),
        ['k1', 'k2', 'k3', 'k4', 'k5'],
      );
    });
  });

  describe(`regulations listed on ${backend.name}`, () => {
    test('GET /regulations lists deletion requests newest first, by status, in pages', async (ctx) => {
      const cleanup = cleanupStack();
      ctx.after(() => cleanup.run());
      const clock = new ManualClock(T0);
      const open = await backend.place(cleanup.add, clock);
      const t = await startFerry(testConfig([]), { store: await open(), clock, deliver: false });
      cleanup.add(() => t.stop());
      const made: string[] = [];
      for (const user of ['a', 'b', 'c']) {
        made.push((await t.admin('POST', '/regulations', { userIds: [user] })).json.id);
        clock.advance(1000);
      }
      await t.deletionsDone();
      // Not carried out: the runner is stopped, as a stop leaves a request.
      await t.ferry.regulations.stop();
      const pending = (await t.admin('POST', '/regulations', { userIds: ['d', 'e'], sourceIds: ['app'] })).json.id;

      const all = (await t.admin('GET', '/regulations')).json;
      assert.deepEqual(
        all.regulations.map((r: any) => r.id),
        [pending, ...made.reverse()],
      );
      assert.equal(all.next, null);
      const [newest] = all.regulations;
      assert.deepEqual([newest.status, newest.userIds, newest.userCount, newest.sourceIds], ['pending', ['d', 'e'], 2, ['app']]);
      assert.deepEqual(
        (await t.admin('GET', '/regulations?status=pending')).json.regulations.map((r: any) => r.id),
        [pending],
      );
      const page1 = (await t.admin('GET', '/regulations?status=done&limit=2')).json;
      assert.deepEqual(
        page1.regulations.map((r: any) => [r.id, r.status, r.userIds]),
        [
          [made[0], 'done', []],
          [made[1], 'done', []],
        ],
      );
      const page2 = (await t.admin('GET', `/regulations?status=done&limit=2&after=${encodeURIComponent(page1.next)}`)).json;
      assert.deepEqual(
        page2.regulations.map((r: any) => r.id),
        [made[2]],
      );
      assert.equal(page2.next, null);
      const badStatus = await t.admin('GET', '/regulations?status=running');
      assert.deepEqual([badStatus.status, badStatus.json.errors[0].path], [400, 'status']);
    });
  });
}
