import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, realpathSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AnalyticsError } from '../errors.js';

/** Name of the lock file inside a spool directory. */
export const lockFileName = 'spool.lock';

/**
 * A lock without a readable pid younger than this is taken to be held: a starter may be
 * between creating and writing it (an older client did so). Older, it is a crash leftover.
 */
export const emptyLockStaleMs = 10_000;

// Directories this process holds: a lock naming our own pid that is not in here was left by an
// earlier process that had the same pid (pid 1 in a container, restarted).
const held = new Set<string>();

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function codeOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

function ioFailed(what: string, cause: unknown): AnalyticsError {
  return new AnalyticsError('spool_io_failed', `${what}: ${String(cause)}`, { cause });
}

function locked(pid: number | undefined): AnalyticsError {
  const who = pid === undefined ? 'another client (its lock holds no pid yet)' : `process ${pid}${pid === process.pid ? ' (this one)' : ''}`;
  return new AnalyticsError('spool_locked', `The spool directory is in use by ${who}; give each client its own directory.`);
}

/** The lock's owner, `undefined` when it holds no pid, or `null` when the file is gone. */
function readOwner(path: string): { pid: number | undefined; mtimeMs: number } | null {
  try {
    const mtimeMs = statSync(path).mtimeMs;
    const pid = Number.parseInt(readFileSync(path, 'utf8').trim(), 10);
    return { pid: Number.isSafeInteger(pid) && pid > 0 ? pid : undefined, mtimeMs };
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return null;
    throw ioFailed('The spool lock cannot be read', error);
  }
}

function isStale(owner: { pid: number | undefined; mtimeMs: number }, path: string): boolean {
  if (owner.pid === undefined) return Date.now() - owner.mtimeMs > emptyLockStaleMs;
  return owner.pid === process.pid ? !held.has(path) : !isAlive(owner.pid);
}

function sameFile(a: string, b: string): boolean {
  try {
    const x = statSync(a);
    const y = statSync(b);
    return x.ino === y.ino && x.dev === y.dev;
  } catch {
    return false;
  }
}

/** Longest wait for another starter that moved our fresh lock aside to inspect it (see {@link removeStale}). */
const asideWaitMs = 2000;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Whether the lock just linked from `tmp` is ours. Another starter that found the stale lock
 * before we replaced it may have moved ours aside to inspect it; it puts back a lock whose
 * process lives, so while our file is still linked under another name (`nlink` above 1: the
 * lock, or the inspector's name for it) we wait for it to come back rather than give up, which
 * let every starter refuse. Once only `tmp` is left, the name went to someone else.
 */
function ownsLock(path: string, tmp: string): boolean {
  const until = Date.now() + asideWaitMs;
  for (;;) {
    if (sameFile(path, tmp)) return true;
    let links: number;
    try {
      links = statSync(tmp).nlink;
    } catch {
      return false;
    }
    if (links <= 1 || Date.now() >= until) return false;
    // Synchronous, as taking the lock is: an inspection takes a few file operations.
    Atomics.wait(pause, 0, 0, 1);
  }
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // A leftover temporary file is harmless: nothing reads it.
  }
}

// Moves a stale lock aside under a name of our own, so what is removed is what was inspected: a
// starter that took the lock over in the meantime gets its lock back and we are refused.
function removeStale(path: string, tmpBase: string): void {
  const aside = `${tmpBase}.stale`;
  try {
    renameSync(path, aside);
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return;
    throw ioFailed('The stale spool lock cannot be removed', error);
  }
  const moved = readOwner(aside);
  if (moved && !isStale(moved, path)) {
    try {
      linkSync(aside, path);
    } catch {
      // Another starter holds the name now; either way the directory is in use.
    }
    removeQuietly(aside);
    throw locked(moved.pid);
  }
  removeQuietly(aside);
}

/**
 * Takes the spool directory's lock: a file holding our pid, written under a temporary name and
 * linked to `spool.lock`, so the lock never exists without its owner. A lock whose process is
 * alive refuses with `spool_locked`; one left by a dead process (or without a pid and older
 * than {@link emptyLockStaleMs}) is taken over. Keyed by the resolved directory, so two
 * spellings of one directory are one lock. Process ids are only seen on this host and PID
 * namespace: a directory shared across containers or hosts is not protected.
 * @returns a function that releases the lock.
 * @throws AnalyticsError `spool_locked`, or `spool_io_failed` when the lock cannot be written.
 */
export function acquireSpoolLock(dir: string): () => void {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch (cause) {
    throw ioFailed('The spool directory cannot be resolved', cause);
  }
  const path = join(real, lockFileName);
  const tmp = join(real, `${lockFileName}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    writeFileSync(tmp, `${process.pid}\n`, { flag: 'wx' });
  } catch (cause) {
    throw ioFailed('The spool lock cannot be written', cause);
  }
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(tmp, path);
      } catch (error) {
        if (codeOf(error) !== 'EEXIST') throw ioFailed('The spool lock cannot be taken', error);
        const owner = readOwner(path);
        if (owner === null) continue;
        if (!isStale(owner, path)) throw locked(owner.pid);
        removeStale(path, tmp);
        continue;
      }
      // Two starters that found the same stale lock: only the one whose file is in place holds it.
      if (!ownsLock(path, tmp)) throw locked(readOwner(path)?.pid);
      held.add(path);
      return () => {
        held.delete(path);
        try {
          unlinkSync(path);
        } catch {
          // Already gone: nothing to release.
        }
      };
    }
  } finally {
    removeQuietly(tmp);
  }
  throw new AnalyticsError('spool_locked', 'The spool lock changed hands while it was being taken; another client is starting on the same directory.');
}
