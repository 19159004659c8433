/**
 * Auto-disable with notice: a destination failing without a single success for its
 * `autoDisableAfterMs` (default 3 days; 0 never) is disabled, with a `warn` line, an audit log
 * entry by `system`, a metric and its stats' fields; a success starts the count afresh; one
 * PATCH re-enables it. On both stores (the time it has been failing since is stored), time on
 * the injected clock.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ManualClock } from '../../src/util/clock.js';
import { capturedLogger } from '../helpers/captured-logger.js';
import { cleanups } from '../helpers/cleanups.js';
import { testConfig, webhooksDestination, type TestFerry } from '../helpers/ferry.js';
import { startFerryOn, storeKinds, type StoreKind } from '../helpers/ferry-on-store.js';
import { parsePrometheus } from '../helpers/prometheus.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';

const minute = 60_000;
const hour = 60 * minute;
const day = 24 * hour;

interface Setup {
  ferry: TestFerry;
  clock: ManualClock;
  receiver: TestReceiver;
  lines: Record<string, any>[];
  t0: number;
  /** Sends one event now, lets the worker attempt everything due, and waits for the auto-disable's writes. */
  attempt(): Promise<void>;
  stats(id: string): Promise<{ failingSince: string | null; disabledAt: string | null; disabledReason: string | null; pending: number; dead: number }>;
  enabled(id: string): Promise<boolean>;
}

async function setup(
  kind: StoreKind,
  t: { after: (fn: () => Promise<void> | void) => void },
  destinations: Record<string, unknown>[],
  status = 500,
): Promise<Setup> {
  const onCleanup = cleanups(t);
  const receiver = await startReceiver({ status });
  onCleanup(() => receiver.close());
  const clock = new ManualClock();
  const { logger, lines } = capturedLogger();
  // The circuit breaker off: it would hold a receiver failing every time after a few failures,
  // and these tests follow the failed attempts themselves (with it on, the breaker's probes are
  // the failed attempts that keep the count; see circuit-breaker.test.ts).
  const config = testConfig(
    destinations.map((d) => webhooksDestination(d['id'] as string, [`${receiver.url}/${d['id'] as string}`], { circuitBreaker: { enabled: false }, ...d })),
  );
  const { server: ferry } = await startFerryOn(kind, config, { clock, deliver: false, logger }, onCleanup);
  let n = 0;
  return {
    ferry,
    clock,
    receiver,
    lines,
    t0: clock.now(),
    async attempt() {
      const sent = await ferry.send('/v1/track', { userId: 'u1', event: 'E', messageId: `m-${n++}` });
      assert.equal(sent.status, 200);
      await ferry.idle();
      await ferry.ferry.autoDisable.settled();
    },
    async stats(id) {
      return (await ferry.admin('GET', `/destinations/${id}/stats`)).json;
    },
    async enabled(id) {
      return (await ferry.admin('GET', `/destinations/${id}`)).json.enabled;
    },
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

for (const kind of storeKinds) {
  describe(`auto-disable (${kind})`, () => {
    test('A01 disabled after autoDisableAfterMs of failures, not a millisecond before; logged, audited, counted, shown', async (t) => {
      const s = await setup(kind, t, [{ id: 'flaky', autoDisableAfterMs: hour }, { id: 'fine' }]);
      await s.attempt();
      assert.deepEqual((({ failingSince, disabledAt, disabledReason }) => ({ failingSince, disabledAt, disabledReason }))(await s.stats('flaky')), {
        failingSince: iso(s.t0),
        disabledAt: null,
        disabledReason: null,
      });
      s.clock.set(s.t0 + 30 * minute);
      await s.attempt();
      s.clock.set(s.t0 + hour - 1);
      await s.attempt();
      assert.equal(await s.enabled('flaky'), true, 'not before autoDisableAfterMs');
      assert.equal((await s.stats('flaky')).failingSince, iso(s.t0), 'failing since the first failure, however many followed');

      s.clock.set(s.t0 + hour);
      await s.attempt();
      assert.equal(await s.enabled('flaky'), false);
      assert.equal(await s.enabled('fine'), true, 'only the failing destination');
      const stats = await s.stats('flaky');
      assert.equal(stats.failingSince, iso(s.t0));
      assert.equal(stats.disabledAt, iso(s.t0 + hour));
      assert.match(stats.disabledReason!, /without a single success.*autoDisableAfterMs \(3600000 ms\)/);

      const line = s.lines.find((l) => l.destinationId === 'flaky' && /destination disabled/.test(l.msg));
      assert.ok(line, 'a log line');
      assert.equal(line.level, 40, 'at warn');
      assert.equal(line.failingSince, iso(s.t0));

      const audit = (await s.ferry.admin('GET', '/audit')).json.entries as any[];
      const entry = audit.find((e) => e.action === 'destination.auto-disable');
      assert.ok(entry, 'an audit entry');
      assert.equal(entry.tokenId, 'system');
      assert.deepEqual(entry.object, { kind: 'destination', id: 'flaky' });
      assert.equal(entry.before.enabled, true);
      assert.equal(entry.after.enabled, false);
      assert.ok(!JSON.stringify(entry).includes('test-shared-secret'), 'secrets masked');

      const scrape = parsePrometheus((await s.ferry.ferry.metrics!.scrape()).text);
      assert.equal(scrape.value('ferry_destinations_auto_disabled_total', { destination: 'flaky' }), 1);

      // Meanwhile: pending jobs stay pending (not attempted while it is off), and it gets no
      // call received while it is off.
      const before = s.receiver.requests.filter((r) => r.path === '/flaky').length;
      const pendingBefore = (await s.stats('flaky')).pending;
      assert.ok(pendingBefore > 0);
      s.clock.advance(day);
      await s.attempt();
      assert.equal(s.receiver.requests.filter((r) => r.path === '/flaky').length, before);
      assert.equal((await s.stats('flaky')).pending, pendingBefore);
      assert.equal(scrape.value('ferry_destinations_auto_disabled_total', { destination: 'fine' }), undefined);
    });

    test('A05 with the circuit breaker on (the default), its failed probes carry the count to the disable', async (t) => {
      const s = await setup(kind, t, [{ id: 'flaky', autoDisableAfterMs: hour, circuitBreaker: {} }]);
      // Every 5 minutes (the breaker's longest cool-down): a new call, and whatever is due,
      // the breaker's probe among it.
      for (let at = 0; at <= hour + 10 * minute && (await s.enabled('flaky')); at += 5 * minute) {
        s.clock.set(s.t0 + at);
        await s.attempt();
      }
      assert.equal(await s.enabled('flaky'), false, 'disabled by a failed probe once the hour was up');
      const stats = await s.stats('flaky');
      assert.equal(stats.failingSince, iso(s.t0));
      assert.ok(Date.parse(stats.disabledAt!) >= s.t0 + hour, 'not before autoDisableAfterMs');
    });

    test('A02 a success starts the count afresh', async (t) => {
      const s = await setup(kind, t, [{ id: 'flaky', autoDisableAfterMs: hour }]);
      await s.attempt();
      s.clock.set(s.t0 + 40 * minute);
      s.receiver.reply({ status: 200 });
      await s.attempt();
      assert.equal((await s.stats('flaky')).failingSince, null);
      s.receiver.reply({ status: 500 });
      s.clock.set(s.t0 + 50 * minute);
      await s.attempt();
      assert.equal((await s.stats('flaky')).failingSince, iso(s.t0 + 50 * minute));
      s.clock.set(s.t0 + hour + 10 * minute);
      await s.attempt();
      assert.equal(await s.enabled('flaky'), true, 'an hour after the first failure, but not after the success');
      s.clock.set(s.t0 + hour + 50 * minute);
      await s.attempt();
      assert.equal(await s.enabled('flaky'), false);
    });

    test('A03 0 turns it off; absent, it is 3 days', async (t) => {
      const s = await setup(kind, t, [{ id: 'never', autoDisableAfterMs: 0 }, { id: 'default' }], 400);
      await s.attempt();
      s.clock.set(s.t0 + 3 * day - 1);
      await s.attempt();
      assert.equal(await s.enabled('default'), true);
      s.clock.set(s.t0 + 3 * day);
      await s.attempt();
      assert.equal(await s.enabled('default'), false);
      s.clock.set(s.t0 + 30 * day);
      await s.attempt();
      assert.equal(await s.enabled('never'), true);
      assert.equal((await s.stats('never')).failingSince, iso(s.t0), 'still tracked, for the stats');
    });

    test('A04 one PATCH re-enables it, afresh; its dead letters stay replayable; its pending jobs go out', async (t) => {
      // 400: each attempt is dead at once.
      const s = await setup(kind, t, [{ id: 'flaky', autoDisableAfterMs: hour }], 400);
      await s.attempt();
      s.clock.set(s.t0 + hour);
      await s.attempt();
      assert.equal(await s.enabled('flaky'), false);
      const dead = (await s.stats('flaky')).dead;
      assert.equal(dead, 2);

      const patched = await s.ferry.admin('PATCH', '/destinations/flaky', { enabled: true });
      assert.equal(patched.status, 200);
      assert.equal(patched.json.enabled, true);
      assert.deepEqual((({ failingSince, disabledAt, disabledReason }) => ({ failingSince, disabledAt, disabledReason }))(await s.stats('flaky')), {
        failingSince: null,
        disabledAt: null,
        disabledReason: null,
      });
      // A failure right after is the first of a new count, not the last straw.
      s.clock.advance(minute);
      await s.attempt();
      assert.equal(await s.enabled('flaky'), true);
      assert.equal((await s.stats('flaky')).failingSince, iso(s.clock.now()));

      s.receiver.reply({ status: 200 });
      const letters = (await s.ferry.admin('GET', '/dead-letters?destinationId=flaky')).json.deliveries as { id: string }[];
      assert.equal(letters.length, 3);
      for (const letter of letters) assert.equal((await s.ferry.admin('POST', `/dead-letters/${letter.id}/replay`)).status, 200);
      await s.ferry.idle();
      await s.ferry.ferry.autoDisable.settled();
      assert.equal((await s.stats('flaky')).dead, 0);
      assert.equal((await s.stats('flaky')).failingSince, null);
    });
  });
}
