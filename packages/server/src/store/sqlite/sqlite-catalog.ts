import type Database from 'better-sqlite3';
import type { DestinationConfig, SourceConfig } from '../../config/model.js';
import type { CatalogStore, StoredCatalog } from '../catalog-store.js';

/** Sources, destinations and settings on SQLite, each kept as its JSON under its id. */
export class SqliteCatalog implements CatalogStore {
  /** The apply lock: one process owns the file, so a queue of its own is the whole lock. */
  private locked: Promise<unknown> = Promise.resolve();

  constructor(private readonly db: Database.Database) {}

  withCatalogLock<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.locked.then(fn);
    this.locked = run.catch(() => {});
    return run;
  }

  async loadCatalog(): Promise<StoredCatalog> {
    const parse = <T>(rows: unknown[]): T[] => (rows as { config: string }[]).map((r) => JSON.parse(r.config) as T);
    return {
      sources: parse<SourceConfig>(this.db.prepare(`SELECT config FROM sources ORDER BY id`).all()),
      destinations: parse<DestinationConfig>(this.db.prepare(`SELECT config FROM destinations ORDER BY id`).all()),
    };
  }

  async saveSource(source: SourceConfig): Promise<void> {
    this.db
      .prepare(`INSERT INTO sources (id, config) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET config = excluded.config`)
      .run(source.id, JSON.stringify(source));
  }

  async deleteSource(id: string): Promise<void> {
    this.db.prepare(`DELETE FROM sources WHERE id = ?`).run(id);
  }

  async replaceDestination(next: DestinationConfig, previous: DestinationConfig): Promise<boolean> {
    // Both sides are JSON.stringify of the same shape, so the stored text compares exactly.
    const changed = this.db
      .prepare(`UPDATE destinations SET config = ? WHERE id = ? AND config = ?`)
      .run(JSON.stringify(next), previous.id, JSON.stringify(previous)).changes;
    // As saveDestination: an enabled destination written starts afresh (destination-health.ts).
    if (changed === 1 && next.enabled) this.db.prepare(`DELETE FROM destination_health WHERE destination_id = ?`).run(next.id);
    return changed === 1;
  }

  async saveDestination(destination: DestinationConfig): Promise<void> {
    this.db
      .prepare(`INSERT INTO destinations (id, config) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET config = excluded.config`)
      .run(destination.id, JSON.stringify(destination));
    // An enabled destination written (re-enabled, edited) starts afresh: see destination-health.ts.
    if (destination.enabled) this.db.prepare(`DELETE FROM destination_health WHERE destination_id = ?`).run(destination.id);
  }

  async deleteDestination(id: string): Promise<void> {
    this.db.prepare(`DELETE FROM destinations WHERE id = ?`).run(id);
    // A destination made again under this id starts afresh.
    this.db.prepare(`DELETE FROM destination_health WHERE destination_id = ?`).run(id);
  }

  async getSetting(key: string): Promise<string | null> {
    const row = this.db.prepare(`SELECT value FROM settings WHERE key = ?`).get(key) as { value: string } | undefined;
    return row?.value ?? null;
  }

  async setSetting(key: string, value: string): Promise<void> {
    this.db.prepare(`INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run(key, value);
  }
}
