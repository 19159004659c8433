import Database from 'better-sqlite3';

/**
 * Runs `fn` on a read-only connection of the test's own to a SQLite store's file, closed
 * before it returns (an open reader would keep the store from truncating its WAL), so a test
 * reads the tables without reaching into the store.
 */
export function inSqliteFile<T>(path: string, fn: (db: Database.Database) => T): T {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}
