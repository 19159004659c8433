import type Database from 'better-sqlite3';

/** A total {@link SqliteStoreTotals} keeps. */
export type SqliteTotalName = 'events' | 'succeeded';

/**
 * The store-wide totals of `GET /admin/v1/stats` that the backlog's counts
 * (sqlite-backlog-counts.ts) do not hold: events stored and deliveries that succeeded. Kept as
 * they are, and for the same reasons: a row per total in a TEMP table of the store's one
 * connection, so a write rolled back takes its count with it, added to once per statement or
 * batch by the writers, and counted from the indexes once, when the store opens, instead of at
 * every read.
 */
export class SqliteStoreTotals {
  private readonly addSql: Database.Statement<[number, SqliteTotalName]>;
  private readonly readSql: Database.Statement<[], { name: SqliteTotalName; n: number }>;

  constructor(db: Database.Database) {
    db.exec(`
      CREATE TEMP TABLE IF NOT EXISTS store_totals (
        name TEXT PRIMARY KEY,
        n INTEGER NOT NULL
      ) WITHOUT ROWID;
      DELETE FROM temp.store_totals;
      INSERT INTO temp.store_totals (name, n) VALUES
        ('events', (SELECT COUNT(*) FROM main.events)),
        ('succeeded', (SELECT COUNT(*) FROM main.deliveries INDEXED BY deliveries_status WHERE status = 'succeeded'));
    `);
    this.addSql = db.prepare(`UPDATE temp.store_totals SET n = n + ? WHERE name = ?`);
    this.readSql = db.prepare(`SELECT name, n FROM temp.store_totals`);
  }

  /** Adds to a total; runs inside the caller's transaction. */
  add(name: SqliteTotalName, n: number): void {
    if (n !== 0) this.addSql.run(n, name);
  }

  read(): Record<SqliteTotalName, number> {
    const out: Record<SqliteTotalName, number> = { events: 0, succeeded: 0 };
    for (const r of this.readSql.all()) out[r.name] = r.n;
    return out;
  }
}
