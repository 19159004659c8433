import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Makes this store the only one on the file at `path` for as long as it is open: leases live in
 * the store's memory, so a second process delivering from the same file would send every job
 * twice. The lock is an exclusive SQLite lock on a small file beside it (`<path>.lock`),
 * which the operating system drops when the process ends, however it ends; the database file
 * itself stays readable by other tools. Close the handle returned to let the file go.
 *
 * Creates the store's directory first, if missing.
 *
 * @throws StoreInUseError when another store (in this process or another) holds the file; Error naming it
 * when the directory or the lock cannot be created or written (see {@link cannotOpen}).
 */
export function takeOwnership(path: string): Database.Database {
  let lock: Database.Database | undefined;
  try {
    mkdirSync(dirname(path), { recursive: true });
    lock = new Database(`${path}.lock`, { timeout: 0 });
    // In exclusive mode a connection keeps the locks it takes; the write takes the strongest.
    // The journal in memory: the file holds nothing worth one, and no -journal file is left beside it.
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.pragma('journal_mode = MEMORY');
    lock.pragma('user_version = 1');
    return lock;
  } catch (error) {
    lock?.close();
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') throw new StoreInUseError(path);
    throw cannotOpen(path, error);
  }
}

/** Another store (in this process or another) holds the file: see {@link takeOwnership}. */
export class StoreInUseError extends Error {
  /** The database file. */
  readonly path: string;
  constructor(path: string) {
    super(`${path} is in use by another Ferry process; run one Ferry per data directory (or use PostgreSQL for several nodes)`);
    this.name = 'StoreInUseError';
    this.path = path;
  }
}

/**
 * Causes that mean Ferry may not create or write files where its store lives: a read-only
 * file system or file, missing permissions. (A recursive mkdir on a read-only file system
 * reports ENOENT.)
 */
const unwritable = /^(SQLITE_READONLY|SQLITE_CANTOPEN|SQLITE_PERM|EACCES|EPERM|EROFS|ENOENT)/;

/**
 * Why the store at `path` could not be opened, naming it: the driver's own words ("unable to
 * open database file", "attempt to write a readonly database") say neither which file nor
 * what to do. The original error is the cause, and its code stays the error's code.
 */
export function cannotOpen(path: string, error: unknown): Error {
  const code = (error as { code?: unknown } | null)?.code;
  const hint =
    typeof code === 'string' && unwritable.test(code)
      ? ' (Ferry must be able to create and write files in its data directory: check its owner, its permissions and that its file system is mounted read-write, or choose another with --data or FERRY_DATA_DIR)'
      : '';
  const wrapped = new Error(`cannot open the SQLite store at ${path}: ${error instanceof Error ? error.message : String(error)}${hint}`, { cause: error });
  return typeof code === 'string' ? Object.assign(wrapped, { code }) : wrapped;
}
