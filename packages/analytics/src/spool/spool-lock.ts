import { closeSync, openSync, readFileSync, realpathSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { AnalyticsError } from '../errors.js';

/** Name of the lock file inside a spool directory. */
export const lockFileName = 'spool.lock';

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

function ownerOf(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8').trim(), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes the spool directory's lock: a file created exclusively, holding our pid. A lock whose
 * process is alive refuses with `spool_locked`; one left by a dead process (or unreadable, a
 * crash between create and write) is taken over.
 * @returns a function that releases the lock.
 */
export function acquireSpoolLock(dir: string): () => void {
  // Keyed by the resolved directory: 'spool' and its absolute path (or a symlink to it) are one
  // directory, and a second client spelling it differently must be refused, not take the lock.
  const path = join(realpathSync(dir), lockFileName);
  for (let attempt = 0; attempt < 3; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const pid = ownerOf(path);
      const ours = pid === process.pid;
      if (pid !== undefined && (ours ? held.has(path) : isAlive(pid))) {
        throw new AnalyticsError(
          'spool_locked',
          `The spool directory is in use by process ${pid}${ours ? ' (this one)' : ''}; give each client its own directory.`,
        );
      }
      try {
        unlinkSync(path);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
      continue;
    }
    try {
      writeSync(fd, `${process.pid}\n`);
    } finally {
      closeSync(fd);
    }
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
  throw new AnalyticsError('spool_locked', 'The spool lock changed hands while it was being taken; another client is starting on the same directory.');
}
