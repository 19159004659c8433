import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import type { FerryOptions } from '../../src/app.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { adminToken, startFerry, testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { freshSchema } from '../helpers/postgres.js';
import { parsePrometheus, type Scrape } from '../helpers/prometheus.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';

const delivery = {
  timeoutMs: 1000,
  retry: { initialDelayMs: 1000, multiplier: 2, maxDelayMs: 60_000, jitter: 0, windowMs: 3_600_000, maxRetryAfterMs: 600_000 },
};

async function scrape(ferry: TestFerry, token: string | null = adminToken): Promise<{ status: number; scrape?: Scrape; contentType: string | null }> {
  const res = await fetch(`${ferry.url}/metrics`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
  const text = await res.text();
  return { status: res.status, contentType: res.headers.get('content-type'), scrape: res.status === 200 ? parsePrometheus(text) : undefined };
}

const track = (messageId: string) => ({ type: 'track', event: 'Order Completed', userId: 'u1', messageId });

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`metrics on ${kind}`, () => {
    let ok: TestReceiver;
    let failing: TestReceiver;
    let refusing: TestReceiver;
    before(async () => {
      ok = await startReceiver({ status: 200 });
      failing = await startReceiver({ status: 500 });
      refusing = await startReceiver({ status: 400 });
    });
    after(async () => {
      await ok.close();
      await failing.close();
      await refusing.close();
    });

    async function start(t: { after: (fn: () => Promise<void>) => void }, options: Partial<FerryOptions> = {}) {
      const onCleanup = cleanups(t);
      const clock = new ManualClock();
      let store: PgStore | undefined;
      if (kind === 'postgres') {
        const { url, schema } = await freshSchema(onCleanup);
        store = await PgStore.open({ connectionString: url, schema });
      }
      const config = testConfig(
        [webhooksDestination('hooks', [ok.url]), webhooksDestination('broken', [failing.url]), webhooksDestination('gone', [refusing.url])],
        { delivery },
      );
      const ferry = await startFerry(config, { clock, deliver: false, ...(store ? { store } : {}), ...options });
      onCleanup(() => ferry.stop());
      return { ferry, clock };
    }

    test('counts a known workload; pending and oldest age follow a failing receiver; the histogram counts each request', async (t) => {
      const { ferry, clock } = await start(t);
      const first = await ferry.send('/v1/batch', { batch: [track('m1'), track('m2'), { type: 'bogus', messageId: 'm3' }] });
      assert.equal(first.status, 200);
      assert.equal(first.json.rejected.length, 1);
      assert.equal((await ferry.send('/v1/batch', { batch: [track('m1')] })).status, 200);
      await ferry.idle();

      const s = (await scrape(ferry)).scrape!;
      assert.equal(s.value('ferry_ingest_messages_total', { source: 'app', outcome: 'accepted' }), 2);
      assert.equal(s.value('ferry_ingest_messages_total', { source: 'app', outcome: 'duplicate' }), 1);
      assert.equal(s.value('ferry_ingest_messages_total', { source: 'app', outcome: 'rejected' }), 1);
      assert.equal(s.types.get('ferry_ingest_messages_total'), 'counter');
      assert.equal(s.value('ferry_delivery_attempts_total', { destination: 'hooks', outcome: 'success' }), 2);
      assert.equal(s.value('ferry_delivery_attempts_total', { destination: 'broken', outcome: 'retry' }), 2);
      assert.equal(s.value('ferry_delivery_attempts_total', { destination: 'gone', outcome: 'dead' }), 2);
      assert.equal(s.types.get('ferry_delivery_duration_seconds'), 'histogram');
      for (const destination of ['hooks', 'broken', 'gone']) {
        assert.equal(s.value('ferry_delivery_duration_seconds_count', { destination }), 2, `one observation per request to ${destination}`);
        assert.equal(s.value('ferry_delivery_duration_seconds_bucket', { destination, le: '+Inf' }), 2);
      }
      assert.equal(s.value('ferry_deliveries_pending', { destination: 'hooks' }), 0);
      assert.equal(s.value('ferry_deliveries_pending', { destination: 'broken' }), 2);
      assert.equal(s.value('ferry_deliveries_pending', { destination: 'gone' }), 0);
      assert.equal(s.value('ferry_dead_letters', { destination: 'gone' }), 2);
      assert.equal(s.value('ferry_dead_letters', { destination: 'broken' }), 0);
      assert.equal(s.value('ferry_delivery_oldest_pending_age_seconds', { destination: 'broken' }), 0);
      assert.equal(s.value('ferry_delivery_oldest_pending_age_seconds', { destination: 'hooks' }), 0);
      assert.ok(s.value('process_cpu_user_seconds_total') !== undefined, "Node's process defaults are included");

      // The receiver keeps failing: the backlog stays and ages with the clock, each retry a request more.
      clock.advance(90_000);
      await ferry.idle();
      const later = (await scrape(ferry)).scrape!;
      assert.equal(later.value('ferry_deliveries_pending', { destination: 'broken' }), 2);
      assert.equal(later.value('ferry_delivery_oldest_pending_age_seconds', { destination: 'broken' }), 90);
      assert.equal(later.value('ferry_delivery_attempts_total', { destination: 'broken', outcome: 'retry' }), 4);
      assert.equal(later.value('ferry_delivery_duration_seconds_count', { destination: 'broken' }), 4);

      // A new message ages from its own creation; the oldest stays the first.
      clock.advance(10_000);
      await ferry.send('/v1/batch', { batch: [track('m4')] });
      const newest = (await scrape(ferry)).scrape!;
      assert.equal(newest.value('ferry_deliveries_pending', { destination: 'broken' }), 3);
      assert.equal(newest.value('ferry_delivery_oldest_pending_age_seconds', { destination: 'broken' }), 100);
    });

    test('per-destination stats: backlog from the store, recent attempts from the windows; 404 for an unknown destination', async (t) => {
      const { ferry, clock } = await start(t);
      await ferry.send('/v1/batch', { batch: [track('a1'), track('a2'), track('a3')] });
      const failedAt = new Date(clock.now()).toISOString();
      await ferry.idle();
      await ferry.ferry.autoDisable.settled();
      clock.advance(30_000);
      const broken = await ferry.admin('GET', '/destinations/broken/stats');
      assert.equal(broken.status, 200);
      assert.deepEqual(
        { ...broken.json, windows: undefined, circuits: undefined },
        {
          destinationId: 'broken',
          pending: 3,
          retrying: 3,
          dead: 0,
          oldestPendingAgeSeconds: 30,
          windows: undefined,
          circuits: undefined,
          failingSince: failedAt,
          disabledAt: null,
          disabledReason: null,
        },
      );
      // Three failures are fewer than the five in a row that open a circuit.
      assert.deepEqual(
        broken.json.circuits.map((c: any) => [c.state, c.consecutiveFailures, c.probeAt]),
        [['closed', 3, null]],
      );
      assert.deepEqual([broken.json.windows['5m'].attempts, broken.json.windows['5m'].succeeded, broken.json.windows['5m'].successRate], [3, 0, 0]);
      const hooks = (await ferry.admin('GET', '/destinations/hooks/stats')).json;
      assert.deepEqual([hooks.pending, hooks.retrying, hooks.dead, hooks.oldestPendingAgeSeconds], [0, 0, 0, null]);
      assert.deepEqual([hooks.windows['1h'].attempts, hooks.windows['1h'].succeeded, hooks.windows['1h'].successRate], [3, 3, 1]);
      assert.equal(typeof hooks.windows['1h'].p50Ms, 'number');
      assert.ok(hooks.windows['1h'].p99Ms >= hooks.windows['1h'].p50Ms);
      assert.equal((await ferry.admin('GET', '/destinations/gone/stats')).json.dead, 3);

      // Ten minutes on, the attempts have left the 5-minute window but not the hour's.
      clock.advance(10 * 60_000);
      const quiet = (await ferry.admin('GET', '/destinations/hooks/stats')).json;
      assert.deepEqual(quiet.windows['5m'], { attempts: 0, succeeded: 0, successRate: null, p50Ms: null, p99Ms: null, filtered: 0 });
      assert.equal(quiet.windows['1h'].attempts, 3);

      const unknown = await ferry.admin('GET', '/destinations/nope/stats');
      assert.equal(unknown.status, 404);
      assert.equal(unknown.json.errors[0].code, 'not_found');
    });

    test('every destination with its stats in one call: each as its own stats say, but retrying; a bad include is 400', async (t) => {
      const { ferry, clock } = await start(t);
      await ferry.send('/v1/batch', { batch: [track('a1'), track('a2')] });
      await ferry.idle();
      await ferry.ferry.autoDisable.settled();
      clock.advance(30_000);
      const listed = await ferry.admin('GET', '/destinations?include=stats');
      assert.equal(listed.status, 200);
      assert.deepEqual(
        listed.json.destinations.map((d: any) => [d.id, d.stats.pending, d.stats.dead]),
        [
          ['broken', 2, 0],
          ['gone', 0, 2],
          ['hooks', 0, 0],
        ],
      );
      const plain = (await ferry.admin('GET', '/destinations')).json.destinations;
      for (const [i, d] of listed.json.destinations.entries()) {
        const { stats, ...destination } = d;
        assert.deepEqual(destination, plain[i], `${d.id}: the destination as the plain list shows it`);
        const { retrying, ...own } = (await ferry.admin('GET', `/destinations/${d.id}/stats`)).json;
        assert.equal(typeof retrying, 'number');
        assert.equal('retrying' in stats, false);
        assert.deepEqual(stats, own, `${d.id}: its stats as GET /destinations/{id}/stats answers them`);
      }
      assert.equal(listed.json.destinations[0].stats.failingSince !== null, true, 'the health records are read for the list too');
      assert.equal('stats' in plain[0], false);

      const bad = await ferry.admin('GET', '/destinations?include=backlog');
      assert.equal(bad.status, 400);
      assert.deepEqual([bad.json.errors[0].code, bad.json.errors[0].path], ['bad_request', 'include']);
      const unknownKey = await ferry.admin('GET', '/destinations?with=stats');
      assert.equal(unknownKey.status, 400);
      assert.equal(unknownKey.json.errors[0].code, 'unknown_parameter');
    });
  });
}

describe('who may scrape', () => {
  test('401 without the admin token or with a wrong one; 200 with it', async (t) => {
    const ferry = await startFerry(testConfig([]), { deliver: false });
    t.after(() => ferry.stop());
    const none = await scrape(ferry, null);
    assert.equal(none.status, 401);
    assert.equal((await scrape(ferry, 'x'.repeat(40))).status, 401);
    const ok = await scrape(ferry);
    assert.equal(ok.status, 200);
    assert.match(ok.contentType ?? '', /^text\/plain; version=0\.0\.4/);
  });

  test('open with the public switch', async (t) => {
    const ferry = await startFerry(testConfig([]), { deliver: false, metricsPublic: true });
    t.after(() => ferry.stop());
    const res = await scrape(ferry, null);
    assert.equal(res.status, 200);
    assert.equal(res.scrape!.types.get('ferry_deliveries_pending'), 'gauge');
  });

  test('with metrics off there is no /metrics, and the stats have empty windows', async (t) => {
    const ferry = await startFerry(testConfig([webhooksDestination('hooks', ['http://127.0.0.1:9/'])]), { deliver: false, metrics: false });
    t.after(() => ferry.stop());
    assert.equal((await scrape(ferry)).status, 404);
    const stats = await ferry.admin('GET', '/destinations/hooks/stats');
    assert.equal(stats.status, 200);
    assert.equal(stats.json.windows['5m'].attempts, 0);
  });

  test('two servers in one process keep their own series', async (t) => {
    const a = await startFerry(testConfig([]), { deliver: false });
    t.after(() => a.stop());
    const b = await startFerry(testConfig([]), { deliver: false });
    t.after(() => b.stop());
    await a.send('/v1/batch', { batch: [track('x1')] });
    assert.equal((await scrape(a)).scrape!.value('ferry_ingest_messages_total', { source: 'app', outcome: 'accepted' }), 1);
    assert.equal((await scrape(b)).scrape!.value('ferry_ingest_messages_total', { source: 'app', outcome: 'accepted' }), undefined);
  });
});

describe('successful deliveries are logged at debug', () => {
  test('a line per success at debug, none at info', async (t) => {
    const receiver = await startReceiver({ status: 200 });
    t.after(() => receiver.close());
    for (const level of ['debug', 'info'] as const) {
      const lines: Record<string, any>[] = [];
      const logger = pino({ level }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const ferry = await startFerry(testConfig([webhooksDestination('hooks', [receiver.url])]), { deliver: false, logger });
      await ferry.send('/v1/batch', { batch: [track('d1')] });
      await ferry.idle();
      await ferry.stop();
      const succeeded = lines.filter((l) => l.msg === 'delivery succeeded');
      assert.equal(succeeded.length, level === 'debug' ? 1 : 0, level);
      if (level === 'debug') assert.deepEqual([succeeded[0]!.level, succeeded[0]!.destinationId, succeeded[0]!.attempts], [20, 'hooks', 1]);
    }
  });
});
