import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ManualClock } from '../../src/util/clock.js';
import { RepeatedErrorLog } from '../../src/util/repeated-error-log.js';
import { capturedLogger } from '../helpers/captured-logger.js';

/** A RepeatedErrorLog on a manual clock whose log lines are kept as parsed JSON. */
function setup(intervalMs = 60_000) {
  const clock = new ManualClock();
  const { lines, logger } = capturedLogger();
  const log = new RepeatedErrorLog({ logger, clock, intervalMs, message: 'claim failed', recoveredMessage: 'claims work again' });
  return { clock, lines, log };
}

const diskFull = () => Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });

describe('RepeatedErrorLog', () => {
  test('R01 the first occurrence is logged in full, stack included', () => {
    const { lines, log } = setup();
    log.report(diskFull(), { destinationId: 'd1' });
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.msg, 'claim failed');
    assert.equal(lines[0]!.err.code, 'SQLITE_FULL');
    assert.match(lines[0]!.err.stack, /database or disk is full\n\s+at /);
    assert.equal(lines[0]!.destinationId, 'd1');
  });

  test('R02 the same error four times a second for a minute: the first line, then one line with the count', () => {
    const { clock, lines, log } = setup();
    for (let i = 0; i < 240; i++) {
      log.report(diskFull());
      clock.advance(250);
    }
    // 240 reports over 59,750 ms: the interval is not over yet.
    assert.equal(lines.length, 1);
    log.report(diskFull());
    assert.equal(lines.length, 2);
    assert.equal(lines[1]!.msg, 'claim failed; the same error repeated 240 times in the last 60 s');
    assert.equal(lines[1]!.repeats, 240);
    assert.equal(lines[1]!.error, 'database or disk is full');
    assert.equal(lines[1]!.err, undefined, 'no stack on a repeat line');
  });

  test('R03 one repeat line per interval while it lasts', () => {
    const { clock, lines, log } = setup(10_000);
    log.report(diskFull());
    for (let i = 0; i < 30; i++) {
      clock.advance(1000);
      log.report(diskFull());
    }
    assert.deepEqual(
      lines.map((l) => l.repeats),
      [undefined, 10, 10, 10],
    );
  });

  test('R04 a different error is logged in full at once; each keeps its own count', () => {
    const { clock, lines, log } = setup();
    log.report(diskFull());
    log.report(diskFull());
    clock.advance(5000);
    log.report(Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }));
    assert.deepEqual(
      lines.map((l) => l.msg),
      ['claim failed', 'claim failed'],
    );
    assert.equal(lines[1]!.err.code, 'SQLITE_BUSY');
    clock.advance(55_000);
    log.report(diskFull());
    assert.equal(lines[2]!.msg, 'claim failed; the same error repeated 2 times in the last 60 s');
    assert.equal(lines[2]!.error, 'database or disk is full');
  });

  test('R05 an error with the same message and another code is another error', () => {
    const { lines, log } = setup();
    log.report(diskFull());
    log.report(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_IOERR' }));
    assert.equal(lines.length, 2);
    assert.equal(lines[1]!.err.code, 'SQLITE_IOERR');
  });

  test('R06 recovery reports the repeats left and says so; the next error is logged in full again', () => {
    const { clock, lines, log } = setup();
    log.report(diskFull());
    log.report(diskFull());
    log.report(diskFull());
    clock.advance(2000);
    log.resolved();
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg]),
      [
        [50, 'claim failed'],
        [50, 'claim failed; the same error repeated 2 times in the last 2 s'],
        [30, 'claims work again'],
      ],
    );
    log.report(diskFull());
    assert.equal(lines.length, 4);
    assert.ok(lines[3]!.err.stack);
  });

  test('R08 two errors alternating four times a second for a minute: one full line each, then one count line each', () => {
    const { clock, lines, log } = setup();
    const busy = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    for (let i = 0; i < 240; i++) {
      log.report(i % 2 === 0 ? diskFull() : busy());
      clock.advance(250);
    }
    assert.deepEqual(
      lines.map((l) => l.err?.code),
      ['SQLITE_FULL', 'SQLITE_BUSY'],
    );
    // Each a minute after its own first line.
    log.report(diskFull());
    clock.advance(250);
    log.report(busy());
    assert.deepEqual(
      lines.slice(2).map((l) => [l.error, l.repeats]),
      [
        ['database or disk is full', 120],
        ['database is locked', 120],
      ],
    );
  });

  test('R09 errors with one code and changing text (a path, a count) are one kind, logged in full once', () => {
    const { clock, lines, log } = setup();
    for (let i = 0; i < 100; i++) {
      log.report(Object.assign(new Error(`could not write page ${i} of /data/ferry.db`), { code: 'SQLITE_IOERR' }));
      clock.advance(100);
    }
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.err.code, 'SQLITE_IOERR');
  });

  test('R10 an error without a code is told apart by its name and message', () => {
    const { lines, log } = setup();
    log.report(new Error('connection terminated'));
    log.report(new Error('connection terminated'));
    log.report(new TypeError('connection terminated'));
    log.report(new Error('timeout exceeded'));
    assert.deepEqual(
      lines.map((l) => [l.err.type, l.err.message]),
      [
        ['Error', 'connection terminated'],
        ['TypeError', 'connection terminated'],
        ['Error', 'timeout exceeded'],
      ],
    );
  });

  test('R07 success without an error before it logs nothing', () => {
    const { lines, log } = setup();
    log.resolved();
    log.resolved();
    assert.deepEqual(lines, []);
  });
});
