import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative as relativePath } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Analytics, type AnalyticsOptions, type DropEvent, type ErrorEvent, systemClock } from '@ferry/analytics';
import { within } from './support/deadline.js';
import { ManualClock } from './support/manual-clock.js';
import { SinkServer } from './support/sink-server.js';

const logs = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.log'));

describe('durable spool', () => {
  let sink: SinkServer;
  let dir: string;
  beforeEach(async () => {
    sink = await SinkServer.start();
    dir = mkdtempSync(join(tmpdir(), 'ferry-spool-'));
  });
  afterEach(async () => {
    await sink.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const open = (spool: Partial<NonNullable<AnalyticsOptions['spool']>> = {}, options: AnalyticsOptions = {}) =>
    new Analytics('wk', { endpoint: sink.url, flushAt: 100, clock: new ManualClock(), ...options, spool: { dir, ...spool } });

  /** Accepts calls while the server is unreachable, then gives up at close: they stay in the spool. */
  async function leaveUnconfirmed(events: string[], spool: Partial<NonNullable<AnalyticsOptions['spool']>> = {}): Promise<string[]> {
    sink.handler = () => ({ destroy: true });
    const client = open(spool);
    const ids = events.map((event) => client.track({ userId: 'u', event }));
    const result = await within(client.close({ signal: AbortSignal.abort() }), 'close');
    assert.equal(result.unconfirmed.length, events.length);
    sink.handler = () => undefined;
    return ids;
  }

  it('sends again at the next start what was not confirmed, with the same messageIds, then deletes the journal', async () => {
    const ids = await leaveUnconfirmed(['A', 'B', 'C']);
    assert.equal(sink.accepted.length, 0);
    assert.equal(logs(dir).length, 1);
    const client = open();
    assert.equal(client.stats.queued, 3);
    await sink.untilAccepted(3);
    assert.deepEqual(
      sink.accepted.map((m) => m['messageId']),
      ids,
    );
    await within(client.close(), 'close');
    assert.deepEqual(readdirSync(dir), [], 'confirmed segments and the lock are gone');
    const third = open();
    assert.equal(third.stats.queued, 0, 'nothing is sent twice');
    await within(third.close(), 'close');
  });

  it('does not send again what the server confirmed before the restart, whatever its messageId holds', async () => {
    sink.handler = (_req, i) => (i === 0 ? undefined : { destroy: true });
    const client = open({}, { flushAt: 2, maxInFlight: 1 });
    const ids = [client.track({ userId: 'u', event: 'A', messageId: 'own\nid "1"' }), client.track({ userId: 'u', event: 'B' })];
    await sink.untilAccepted(2);
    ids.push(client.track({ userId: 'u', event: 'C' }), client.track({ userId: 'u', event: 'D' }));
    await sink.untilRequests(2);
    await within(client.close({ signal: AbortSignal.abort() }), 'close');
    sink.handler = () => undefined;
    const restarted = open();
    assert.equal(restarted.stats.queued, 2);
    await within(restarted.close(), 'close');
    assert.deepEqual(
      sink.accepted.map((m) => m['messageId']),
      ids,
    );
  });

  it('keeps in the journal what ran out of retries, reports it failed, and sends it at the next start', async () => {
    sink.handler = () => ({ status: 503 });
    // Each message is about 200 bytes once stamped: the bound holds three.
    const client = open({ maxBytes: 600 }, { maxRetries: 0, overflow: 'reject' });
    const errors: ErrorEvent[] = [];
    client.on('error', (e) => errors.push(e));
    const failed: string[] = [];
    const ids = ['A', 'B', 'C'].map((event) => client.track({ userId: 'u', event }, (error, id) => error && failed.push(id)));
    const first = await within(client.flush(), 'flush');
    assert.deepEqual(
      first.failed.map((f) => f.code),
      ['retries_exhausted', 'retries_exhausted', 'retries_exhausted'],
    );
    assert.deepEqual(failed, ids);
    assert.deepEqual(errors[0]?.messageIds, ids);
    // Reported failed, they no longer hold the in-process budget.
    ids.push(...['D', 'E'].map((event) => client.track({ userId: 'u', event })));
    await within(client.flush(), 'flush');
    await within(client.close(), 'close');
    assert.equal(sink.accepted.length, 0);
    sink.handler = () => undefined;
    const restarted = open();
    assert.equal(restarted.stats.queued, 5);
    await within(restarted.close(), 'close');
    assert.deepEqual(
      sink.accepted.map((m) => m['messageId']),
      ids,
    );
  });

  it('releases the lock when the constructor throws after opening the spool (a throwing logger)', async () => {
    const ids = await leaveUnconfirmed(['A']);
    const logger = {
      debug() {
        throw new Error('logger broke');
      },
      warn() {},
      error() {},
    };
    assert.throws(() => open({}, { logger }), /logger broke/);
    const client = open();
    assert.equal(client.stats.queued, 1);
    await within(client.close(), 'close');
    assert.deepEqual(
      sink.accepted.map((m) => m['messageId']),
      ids,
    );
  });

  it('skips a torn last record and reports it through error, not as a failure to start', async () => {
    await leaveUnconfirmed(['A', 'B']);
    // A crash mid-write: a header promising 200 bytes, then 5 of them.
    appendFileSync(join(dir, logs(dir)[0]!), Buffer.from([0, 0, 0, 200, 1, 2, 3, 4, 0x7b, 0x22, 0x74, 0x79, 0x70]));
    const client = open();
    const errors: ErrorEvent[] = [];
    client.on('error', (e) => errors.push(e));
    await sink.untilAccepted(2);
    assert.deepEqual(
      sink.accepted.map((m) => m['event']),
      ['A', 'B'],
    );
    assert.equal(errors.length, 1);
    assert.equal(errors[0]!.error.code, 'spool_damaged');
    assert.match(errors[0]!.error.message, /13 byte\(s\) of torn tail/);
    await within(client.close(), 'close');
  });

  it('skips a record whose CRC does not match and keeps the ones after it', async () => {
    await leaveUnconfirmed(['A', 'B', 'C']);
    const file = join(dir, logs(dir)[0]!);
    const data = readFileSync(file);
    const at = data.indexOf('"event":"B"');
    data[at + 9] = 'X'.charCodeAt(0);
    writeFileSync(file, data);
    const client = open();
    const errors: ErrorEvent[] = [];
    client.on('error', (e) => errors.push(e));
    await sink.untilAccepted(2);
    assert.deepEqual(
      sink.accepted.map((m) => m['event']),
      ['A', 'C'],
    );
    assert.equal(errors[0]?.error.code, 'spool_damaged');
    assert.match(errors[0]!.error.message, /1 corrupt record/);
    await within(client.close(), 'close');
  });

  it('refuses a second client on the same directory with spool_locked', async () => {
    const first = open();
    assert.throws(() => open(), { name: 'AnalyticsError', code: 'spool_locked' });
    await within(first.close(), 'close');
    const again = open();
    await within(again.close(), 'close');
  });

  it('refuses a second client that spells the same directory differently (relative and absolute)', async () => {
    const first = open();
    const relative = relativePath(process.cwd(), dir) || '.';
    assert.notEqual(relative, dir);
    assert.throws(() => open({ dir: relative }), { name: 'AnalyticsError', code: 'spool_locked' });
    assert.throws(() => open({ dir: join(dir, '.') + '/' }), { name: 'AnalyticsError', code: 'spool_locked' });
    first.track({ userId: 'u', event: 'A' });
    await within(first.close(), 'close');
    assert.deepEqual(
      sink.accepted.map((m) => m['event']),
      ['A'],
    );
  });

  it('refuses a directory locked by another live process, and takes over the lock of a dead one', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 20000)'], { stdio: 'ignore' });
    try {
      writeFileSync(join(dir, 'spool.lock'), `${child.pid}\n`);
      assert.throws(
        () => open(),
        (e: Error & { code?: string }) => e.code === 'spool_locked' && e.message.includes(String(child.pid)),
      );
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await within(exited, 'the lock holder to exit');
    }
    const client = open();
    assert.equal(readFileSync(join(dir, 'spool.lock'), 'utf8').trim(), String(process.pid));
    await within(client.close(), 'close');
  });

  it('treats a lock without a pid as held while it is young (a starter between create and write), and takes it over once old', async () => {
    const lock = join(dir, 'spool.lock');
    writeFileSync(lock, '');
    assert.throws(() => open(), { name: 'AnalyticsError', code: 'spool_locked' });
    assert.equal(readFileSync(lock, 'utf8'), '', 'the young lock is left alone');
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    const client = open();
    assert.equal(readFileSync(lock, 'utf8').trim(), String(process.pid));
    await within(client.close(), 'close');
    assert.deepEqual(readdirSync(dir), [], 'no temporary lock file is left');
  });

  it('takes over a lock naming its own pid that it does not hold (a restarted container keeps pid 1)', async () => {
    writeFileSync(join(dir, 'spool.lock'), `${process.pid}\n`);
    const client = open();
    await within(client.close(), 'close');
  });

  it('maxBytes with drop-oldest: evicts the oldest, reports drop, and does not resend the evicted after a restart', async () => {
    sink.handler = () => ({ destroy: true });
    // Each message is about 200 bytes once stamped: room for two or three.
    const client = open({ maxBytes: 600 });
    const drops: DropEvent[] = [];
    client.on('drop', (e) => drops.push(e));
    const ids = ['E0', 'E1', 'E2', 'E3', 'E4'].map((event) => client.track({ userId: 'u', event }));
    assert.ok(drops.length > 0);
    assert.ok(drops.every((d) => d.code === 'queue_overflow'));
    const dropped = drops.flatMap((d) => d.messageIds);
    assert.deepEqual(dropped, ids.slice(0, dropped.length), 'the oldest go first');
    await within(client.close({ signal: AbortSignal.abort() }), 'close');
    sink.handler = () => undefined;
    const restarted = open({ maxBytes: 600 });
    await within(restarted.close(), 'close');
    assert.deepEqual(
      sink.accepted.map((m) => m['messageId']),
      ids.slice(dropped.length),
    );
  });

  it('maxBytes with reject: refuses the new call with queue_full and keeps what was spooled', async () => {
    sink.handler = () => ({ destroy: true });
    const client = open({ maxBytes: 500 }, { overflow: 'reject' });
    const drops: DropEvent[] = [];
    client.on('drop', (e) => drops.push(e));
    let accepted = 0;
    for (let i = 0; i < 10; i++) {
      try {
        client.track({ userId: 'u', event: `E${i}` });
        accepted++;
      } catch (e) {
        assert.equal((e as { code?: string }).code, 'queue_full');
        assert.match((e as Error).message, /spool\.maxBytes/);
      }
    }
    assert.ok(accepted > 0 && accepted < 10);
    assert.equal(drops.length, 10 - accepted);
    await within(client.close({ signal: AbortSignal.abort() }), 'close');
    sink.handler = () => undefined;
    const restarted = open();
    assert.equal(restarted.stats.queued, accepted);
    await within(restarted.close(), 'close');
    assert.equal(sink.accepted.length, accepted);
  });

  it('deletes each segment once every message in it is confirmed', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    sink.handler = () => ({ after: held });
    const client = open({ segmentBytes: 1_000 }, { flushAt: 5, maxInFlight: 1 });
    for (let i = 0; i < 40; i++) client.track({ userId: 'u', event: `E${i}`, properties: { pad: 'x'.repeat(100) } });
    const before = logs(dir).length;
    assert.ok(before >= 4, `the journal rolled over segments (${before})`);
    release();
    await within(client.flush(), 'flush');
    assert.equal(sink.accepted.length, 40);
    assert.ok(logs(dir).length <= 1, `only the active segment is left (${logs(dir).join(', ')})`);
    await within(client.close(), 'close');
    assert.deepEqual(logs(dir), []);
  });

  it('fsync policies: "interval" arms its timer, "batch" and "call" deliver the same', async () => {
    const clock = new ManualClock();
    const client = open({ fsyncIntervalMs: 250 }, { clock });
    client.track({ userId: 'u', event: 'A' });
    assert.equal(await clock.nextTimer((ms) => ms === 250), 250);
    await within(client.close(), 'close');
    for (const fsync of ['batch', 'call'] as const) {
      const c = open({ fsync });
      c.track({ userId: 'u', event: fsync });
      await within(c.close(), 'close');
    }
    assert.deepEqual(
      sink.accepted.map((m) => m['event']),
      ['A', 'batch', 'call'],
    );
  });

  it('"interval": a segment rolled while its background fsync runs stays open until that fsync returns', async () => {
    const logged: string[] = [];
    const logger = { debug() {}, warn() {}, error: (message: string, fields?: Record<string, unknown>) => logged.push(`${message} ${JSON.stringify(fields)}`) };
    const errors: ErrorEvent[] = [];
    // The real clock: each 1 ms turn starts an fsync on the thread pool while the next calls roll segments.
    const client = open({ segmentBytes: 1_000, fsyncIntervalMs: 1 }, { clock: systemClock, logger, flushAt: 100 });
    client.on('error', (e) => errors.push(e));
    const ids: string[] = [];
    for (let round = 0; round < 300; round++) {
      for (let i = 0; i < 10; i++) ids.push(client.track({ userId: 'u', event: `E${round}.${i}`, properties: { pad: 'x'.repeat(100) } }));
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await within(client.close(), 'close');
    assert.deepEqual(logged, []);
    assert.deepEqual(errors, []);
    assert.equal(sink.accepted.length, ids.length);
    assert.deepEqual(new Set(sink.accepted.map((m) => m['messageId'])), new Set(ids));
  });

  it('throws spool_io_failed when the directory cannot be created, and takes no lock', () => {
    const file = join(dir, 'not-a-directory');
    writeFileSync(file, '');
    assert.throws(() => open({ dir: join(file, 'spool') }), { name: 'AnalyticsError', code: 'spool_io_failed' });
    assert.deepEqual(readdirSync(dir), ['not-a-directory']);
  });

  it('refuses bad spool options with invalid_option', () => {
    const bad: unknown[] = [{}, { dir: '' }, { dir, fsync: 'never' }, { dir, maxBytes: 0 }, { dir, fsyncIntervalMs: 1.5 }, { dir, other: 1 }, 'dir'];
    for (const spool of bad) {
      assert.throws(() => new Analytics('wk', { spool } as AnalyticsOptions), { name: 'AnalyticsError', code: 'invalid_option' }, JSON.stringify(spool));
    }
    assert.deepEqual(readdirSync(dir), [], 'nothing was created');
  });
});
