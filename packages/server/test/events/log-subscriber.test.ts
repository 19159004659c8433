/**
 * The log lines of events: a store failure that refuses ingestion requests one after another
 * (a full disk refuses every one) is logged in full once, then once per interval with a count,
 * on a manual clock.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventBus } from '../../src/events/event-bus.js';
import { ingestErrorLogIntervalMs, logEvents } from '../../src/events/log-subscriber.js';
import { ManualClock } from '../../src/util/clock.js';
import { capturedLogger } from '../helpers/captured-logger.js';

function setup() {
  const clock = new ManualClock();
  const { lines, logger } = capturedLogger();
  const bus = new EventBus((err) => assert.fail(String(err)));
  logEvents(bus, logger, clock);
  const refuse = (error: Error) => bus.emit('ingest:refused', { code: 'store_unavailable', status: 503, sourceId: 'app', error });
  return { clock, lines, bus, refuse };
}

const diskFull = (page: number) => Object.assign(new Error(`database or disk is full (page ${page})`), { code: 'SQLITE_FULL' });

test('requests refused 503 by a full disk, 20 a second for a minute: one full line, then one line with the count', () => {
  const { clock, lines, refuse } = setup();
  for (let i = 0; i < 1200; i++) {
    refuse(diskFull(i));
    clock.advance(50);
  }
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!.msg, 'ingestion commit failed; answered 503');
  assert.equal(lines[0]!.err.code, 'SQLITE_FULL');
  assert.equal(lines[0]!.sourceId, 'app');
  refuse(diskFull(1200));
  assert.equal(lines.length, 2);
  assert.equal(lines[1]!.msg, `ingestion commit failed; answered 503; the same error repeated 1200 times in the last ${ingestErrorLogIntervalMs / 1000} s`);
  assert.equal(lines[1]!.err, undefined, 'no stack on a repeat line');
});

test('two store errors alternating are each logged in full once; a commit that succeeds again says so', () => {
  const { clock, lines, bus, refuse } = setup();
  const busy = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
  for (let i = 0; i < 100; i++) {
    refuse(i % 2 === 0 ? diskFull(i) : busy());
    clock.advance(10);
  }
  assert.deepEqual(
    lines.map((l) => l.err?.code),
    ['SQLITE_FULL', 'SQLITE_BUSY'],
  );
  bus.emit('ingest:accepted', { sourceId: 'app', count: 1, duplicates: 0 });
  assert.deepEqual(
    lines.slice(2).map((l) => [l.level, l.repeats, l.msg.replace(/ in the last \d+ s$/, '')]),
    [
      [50, 49, 'ingestion commit failed; answered 503; the same error repeated 49 times'],
      [50, 49, 'ingestion commit failed; answered 503; the same error repeated 49 times'],
      [30, undefined, 'ingestion commits work again'],
    ],
  );
});

test("refusals of the client's own making are not logged", () => {
  const { lines, bus } = setup();
  bus.emit('ingest:refused', { code: 'invalid_json', status: 400, sourceId: 'app' });
  bus.emit('ingest:refused', { code: 'unauthorized', status: 401 });
  assert.deepEqual(lines, []);
});
