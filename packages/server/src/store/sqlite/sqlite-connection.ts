import Database from 'better-sqlite3';
import { migrations } from './migrations/index.js';

/** How long a statement waits for a lock held by another connection before it fails. */
export const BUSY_TIMEOUT_MS = 250;

/**
 * Opens the database file in WAL mode, with the settings the store relies on, and applies
 * pending migrations. Nothing stays open when it throws.
 */
export function openConnection(path: string): Database.Database {
  const db = new Database(path);
  try {
    // A new file gives the pages that retention frees back to the file system
    // (sqlite-retention.ts); only an empty file can take this, so older files keep their
    // free pages for reuse until `VACUUM` converts them (docs/operations.md#retention).
    if ((db.pragma('user_version', { simple: true }) as number) === 0) db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma('journal_mode = WAL');
    // Deleted content is overwritten with zeros, so a deletion request leaves no copy of the
    // user in the file's free space (docs/operations.md#deleted-data has its cost).
    db.pragma('secure_delete = ON');
    // NORMAL by default: claims and completions may be lost in a power cut and are then simply
    // redone (delivery is at least once). Commits that acknowledge input switch to FULL.
    db.pragma('synchronous = NORMAL');
    // Waiting for a lock blocks the event loop, so wait briefly and let the caller answer 503
    // (ingestion) or retry at the next round (delivery) instead.
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // 32 MB of page cache (the default is 2 MB): a group commit of many requests writes
    // several MB, and spilling dirty pages mid-transaction costs extra WAL writes. Bounded,
    // so memory stays flat however large the backlog grows.
    db.pragma('cache_size = -32768');
    db.pragma('temp_store = MEMORY');
    // Checkpoint every ~40 MB of WAL instead of every 4 MB: the same hot pages (the due index,
    // the newest rows) are rewritten by many commits between two checkpoints, and each
    // checkpoint copies them to the database file once, with two fsyncs, on this thread.
    db.pragma('wal_autocheckpoint = 10000');
    migrate(db);
    return db;
  } catch (error) {
    if (db.open) db.close();
    throw error;
  }
}

function migrate(db: Database.Database): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  for (const m of migrations) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    })();
  }
}

/**
 * Copies the WAL into the database file and truncates it to nothing: frames written before
 * a delete still hold the rows as they were, and a checkpoint alone leaves them in the file
 * until they are written over.
 *
 * @throws Error when a reader elsewhere (a backup, a `sqlite3` session) kept it from finishing.
 */
export function truncateWal(db: Database.Database): void {
  const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
  if (result?.busy !== 0) throw new Error('the WAL could not be truncated: another connection is reading the database');
}
