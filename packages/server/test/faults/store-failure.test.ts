/**
 * Store failures while the server runs. Two real faults, no mocks:
 *
 * 1. Disk full. The tests run as root, and chmod does not stop root from writing, so "make
 *    the file read-only" proves nothing here. Instead the data directory lives on its own
 *    tiny tmpfs (`mount -t tmpfs -o size=8m`), and a filler file takes every free block: the
 *    next WAL append gets ENOSPC from the kernel and SQLite reports SQLITE_FULL, exactly as
 *    on a full production disk. Deleting the filler frees the space. (`PRAGMA max_page_count`
 *    from a second connection would not do: it is a per-connection limit.) Where mounting is
 *    not permitted (an unprivileged CI container) this scenario is skipped and says so.
 * 2. The database locked by another process (a backup or a `sqlite3` shell holding the write
 *    lock): a second connection holds `BEGIN IMMEDIATE`, Ferry's writes wait out
 *    busy_timeout and fail with SQLITE_BUSY. Works everywhere.
 * 3. The store made read-only. The kernel checks whether a file may be written when it is
 *    opened, not at each write: a file made read-only (chmod, `chattr +i`) while Ferry has it
 *    open keeps taking its writes, for root and any other user alike, and a file system with
 *    files open for writing cannot be remounted read-only. So the fault shows at the next
 *    start, and that is where it is injected: Ferry stops, the tmpfs of scenario 1 is
 *    remounted read-only (which root cannot write either), and Ferry must refuse to start,
 *    saying which store and why, rather than listen without a store; once the file system is
 *    writable again it starts on the same data and delivers everything it had acknowledged.
 *
 * PostgreSQL stopped is in postgres-stopped.test.ts.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import pino from 'pino';
import { createFerry, type Ferry } from '../../src/app.js';
import { adminToken, testConfig, webhooksDestination, writeKey } from '../helpers/ferry.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { spawnFerry } from '../helpers/spawn-ferry.js';
import { basicAuth, longForm, within } from './support.js';

/** Mounts a tmpfs of `size` on a fresh directory; `skipped` when this machine does not allow it. */
function mountTinyFilesystem(size: string): { dir: string; remount(mode: 'ro' | 'rw'): void; unmount(): void } | { skipped: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    return { skipped: `mount -t tmpfs is not permitted here (${String((error as Error).message).split('\n')[0]})` };
  }
  return {
    dir,
    remount(mode) {
      execFileSync('mount', ['-o', `remount,${mode}`, dir], { stdio: 'pipe' });
    },
    unmount() {
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Takes every free block of the filesystem holding `dir` with one file; returns its path. */
function fillDisk(dir: string): string {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(4096, 0x66);
  try {
    // Bounded: 64 MB of 4 KB writes at most, far more than the tiny filesystem holds.
    for (let i = 0; i < 16_384; i++) writeSync(fd, block);
    throw new Error('the filesystem did not fill up');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
  return path;
}

interface Harness {
  ferry: Ferry;
  url: string;
  receiver: TestReceiver;
  /** One batch of `n` tracks with ids `${tag}-${i}`; the status and the error code, if any. */
  send(tag: string, n: number): Promise<{ status: number; code?: string; ids: string[] }>;
  stats(): Promise<{ events: number; deliveries: Record<string, number> }>;
  stop(): Promise<void>;
}

/**
 * The receiver's outage before the fault opens its circuit breaker, and the default cool-down
 * (30 s) would hold every delivery for about as long as the test waits for them after the disk
 * clears: short cool-downs and ramp keep the breaker in play, probing through the fault.
 */
const quickBreaker = { circuitBreaker: { cooldownMs: 200, maxCooldownMs: 1000, rampStepMs: 100 } };

async function startHarness(dataDir: string, deliver = true): Promise<Harness> {
  const receiver = await startReceiver();
  const ferry = await createFerry({
    config: testConfig([webhooksDestination('hooks', [receiver.url], quickBreaker)], {
      // Short lease and poll, so deliveries whose completion failed during the fault come back soon;
      // retries capped at 1 s, so a job the outage pushed far back is due soon after it ends.
      delivery: { leaseMs: 2000, timeoutMs: 500, pollIntervalMs: 50, retry: { initialDelayMs: 100, maxDelayMs: 1000, jitter: 0 } },
    }),
    dataDir,
    adminToken,
    logger: pino({ level: process.env['FERRY_LOG_LEVEL'] ?? 'silent' }),
    deliver,
  });
  const url = await ferry.start(0, '127.0.0.1');
  return {
    ferry,
    url,
    receiver,
    async send(tag, n) {
      const ids = Array.from({ length: n }, (_, i) => `${tag}-${i}`);
      const res = await fetch(`${url}/v1/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: basicAuth(writeKey) },
        body: JSON.stringify({ batch: ids.map((messageId) => ({ type: 'track', userId: 'u', event: 'E', messageId, properties: { pad: 'p'.repeat(800) } })) }),
      });
      const json = (await res.json()) as { errors?: { code: string }[] };
      return { status: res.status, code: json.errors?.[0]?.code, ids };
    },
    async stats() {
      return (await fetch(`${url}/admin/v1/stats`, { headers: { authorization: `Bearer ${adminToken}` } })).json() as Promise<any>;
    },
    async stop() {
      await ferry.stop();
      await receiver.close();
    },
  };
}

/** Bounded wait until every id has arrived at the receiver. */
async function waitForDelivered(receiver: TestReceiver, ids: Iterable<string>, ms: number): Promise<string[]> {
  const want = new Set(ids);
  const deadline = Date.now() + ms;
  let seen = 0;
  while (want.size > 0 && Date.now() < deadline) {
    for (; seen < receiver.requests.length; seen++) want.delete(receiver.requests[seen]!.json.messageId as string);
    if (want.size === 0) break;
    await within(Math.max(1, deadline - Date.now()), 'arrivals', receiver.waitFor(seen + 1)).catch(() => undefined);
  }
  return [...want];
}

test('disk full while running: 503 store_unavailable (never 200), nothing half-stored, resumes by itself, nothing acknowledged lost', async (t) => {
  const fs = mountTinyFilesystem('8m');
  if ('skipped' in fs) {
    t.skip(fs.skipped);
    return;
  }
  const h = await startHarness(join(fs.dir, 'data'));
  try {
    const acked = new Set<string>();
    // Before: the receiver is down (503), so jobs are still pending and being retried when the disk fills.
    h.receiver.reply({ status: 503 });
    for (let i = 0; i < 4; i++) {
      const r = await h.send(`before${i}`, 10);
      assert.equal(r.status, 200);
      r.ids.forEach((id) => acked.add(id));
    }
    const before = await h.stats();

    const filler = fillDisk(fs.dir);
    const refused = new Set<string>();
    // Serially and concurrently: every answer while the disk is full is a 503 with the stable code.
    for (let i = 0; i < 5; i++) {
      const r = await h.send(`full${i}`, 20);
      assert.deepEqual([r.status, r.code], [503, 'store_unavailable'], `request ${i} while the disk is full`);
      r.ids.forEach((id) => refused.add(id));
    }
    const burst = await Promise.all(Array.from({ length: 6 }, (_, k) => h.send(`burst${k}`, 200)));
    for (const r of burst) {
      assert.deepEqual([r.status, r.code], [503, 'store_unavailable'], 'a concurrent burst (one group commit) while full');
      r.ids.forEach((id) => refused.add(id));
    }
    const during = await h.stats();
    assert.equal(during.events, before.events, 'nothing from a refused request was stored');
    assert.equal((await fetch(`${h.url}/health`)).status, 200, 'the process stays up');
    const notReady = await fetch(`${h.url}/health/ready`);
    assert.equal(notReady.status, 503, 'readiness reports the full disk');
    assert.equal(((await notReady.json()) as any).errors[0].code, 'store_unavailable');

    // The fault goes away; no restart.
    unlinkSync(filler);
    assert.equal((await fetch(`${h.url}/health/ready`)).status, 200, 'ready again once a write succeeds');
    h.receiver.reply({ status: 200 });
    const first = await h.send('after0', 10);
    assert.equal(first.status, 200, 'the very first request after space is freed is accepted');
    first.ids.forEach((id) => acked.add(id));
    for (let i = 1; i < 4; i++) {
      const r = await h.send(`after${i}`, 10);
      assert.equal(r.status, 200);
      r.ids.forEach((id) => acked.add(id));
    }
    const missing = await waitForDelivered(h.receiver, acked, 30_000);
    assert.deepEqual(missing, [], 'every acknowledged event, before and after the fault, is delivered');
    const arrived = new Set(h.receiver.requests.map((r) => r.json.messageId as string));
    assert.equal([...refused].filter((id) => arrived.has(id)).length, 0, 'nothing refused with a 503 is ever delivered');
    t.diagnostic(
      `${acked.size} acknowledged, ${refused.size} refused with 503 while full; ` +
        `${h.receiver.requests.length} arrivals (${h.receiver.requests.length - arrived.size} duplicates)`,
    );
  } finally {
    await h.stop();
    fs.unmount();
  }
});

test('the store made read-only between two starts: start-up refuses and names the store; once writable, nothing acknowledged is lost', async (t) => {
  const fs = mountTinyFilesystem('16m');
  if ('skipped' in fs) {
    t.skip(fs.skipped);
    return;
  }
  const dataDir = join(fs.dir, 'data');
  const storePath = join(dataDir, 'ferry.db');
  const configDir = mkdtempSync(join(tmpdir(), 'ferry-readonly-'));
  try {
    // Accepted while writable, with the worker idle: every job is still pending at the stop.
    const acked = new Set<string>();
    const first = await startHarness(dataDir, false);
    try {
      for (let i = 0; i < 3; i++) {
        const r = await first.send(`before${i}`, 10);
        assert.equal(r.status, 200);
        r.ids.forEach((id) => acked.add(id));
      }
    } finally {
      await first.stop();
    }
    // Refused with EBUSY if any file on it were still open for writing: the stop closed the store.
    fs.remount('ro');

    let refusal = '';
    await assert.rejects(
      createFerry({ config: testConfig([]), dataDir, adminToken, logger: pino({ level: 'silent' }) }),
      (error: Error) => ((refusal = error.message), true),
    );
    assert.ok(refusal.startsWith(`cannot open the SQLite store at ${storePath}: `), `in process, the store is named: ${refusal}`);
    assert.ok(refusal.includes('Ferry must be able to create and write files in its data directory'), `and the remedy: ${refusal}`);
    // As an operator sees it: `ferry serve` stops at once with the same words and never listens.
    const configPath = join(configDir, 'ferry.config.json');
    writeFileSync(configPath, JSON.stringify({ sources: [{ id: 'app', name: 'App', writeKey }], destinations: [] }));
    const serve = spawnFerry(['serve', '--config', configPath, '--data', dataDir, '--host', '127.0.0.1'], { PORT: '0', FERRY_ADMIN_TOKEN: adminToken });
    // If it wrongly starts and listens, the wait below fails the test, and this ends the process.
    t.after(() => void serve.child.kill('SIGKILL'));
    assert.equal((await within(30_000, 'ferry serve to exit', serve.exited)).code, 1);
    assert.ok(serve.output().split('\n').includes(`ferry: ${refusal}`), `ferry serve prints the same words: ${serve.output()}`);
    assert.doesNotMatch(serve.output(), /listening on/);

    // Writable again: the same data, every acknowledged event delivered. (A lock left behind by
    // the refused starts would make this one fail as "in use by another Ferry process".)
    fs.remount('rw');
    const second = await startHarness(dataDir);
    try {
      assert.deepEqual(await waitForDelivered(second.receiver, acked, 30_000), [], 'every event acknowledged before the fault is delivered after it');
      // The report is published: the test's temporary directory stays out of it.
      const said = serve.output().trim().split('\n').pop()!.replace(dataDir, 'DATA_DIR');
      t.diagnostic(`${acked.size} acknowledged before the remount; start-up refused while read-only: ${said}`);
    } finally {
      await second.stop();
    }
  } finally {
    rmSync(configDir, { recursive: true, force: true });
    fs.unmount();
  }
});

/**
 * The default form keeps the delivery worker idle, so only the ingestion commit waits on the
 * lock (one busy timeout, 250 ms). The long form runs the worker too, which shows how the
 * stalls add up: every claim and completion also waits out the busy timeout on the event loop.
 */
for (const withWorker of longForm ? [false, true] : [false]) {
  test(`database locked by another process${withWorker ? ' (worker running)' : ''}: 503 store_unavailable, resumes when released`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-locked-'));
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    const h = await startHarness(dataDir, withWorker);
    const deliverAll = async () => {
      if (!withWorker) await within(30_000, 'the worker to send everything due', h.ferry.worker.runUntilIdle());
    };
    const other = new Database(join(dataDir, 'ferry.db'));
    try {
      const acked = new Set<string>();
      const r0 = await h.send('unlocked', 5);
      assert.equal(r0.status, 200);
      r0.ids.forEach((id) => acked.add(id));
      await deliverAll();
      await waitForDelivered(h.receiver, acked, 10_000);

      other.prepare('BEGIN IMMEDIATE').run();
      const startedAt = Date.now();
      const healthDuring = fetch(`${h.url}/health`).then(() => Date.now() - startedAt);
      const locked = await h.send('locked', 5);
      const lockedMs = Date.now() - startedAt;
      assert.deepEqual([locked.status, locked.code], [503, 'store_unavailable'], 'a locked database is a 503, never a 200');
      const healthMs = await healthDuring;
      other.prepare('COMMIT').run();

      const r1 = await h.send('released', 5);
      assert.equal(r1.status, 200, 'service resumes by itself once the lock is released');
      r1.ids.forEach((id) => acked.add(id));
      await deliverAll();
      assert.deepEqual(await waitForDelivered(h.receiver, acked, 15_000), []);
      assert.equal(h.receiver.requests.filter((r) => String(r.json.messageId).startsWith('locked-')).length, 0);
      // Reported, not asserted (see the report): better-sqlite3 waits out busy_timeout
      // synchronously, so the whole process (health, admin, every source, delivery) stalls.
      const blocked = healthMs >= lockedMs / 2 ? ' (the event loop was blocked)' : '';
      t.diagnostic(`locked write answered 503 after ${lockedMs} ms; /health meanwhile took ${healthMs} ms${blocked}`);
    } finally {
      if (other.inTransaction) other.prepare('ROLLBACK').run();
      other.close();
      await h.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
