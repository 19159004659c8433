import pg from 'pg';
import type { DestinationConfig, SourceConfig } from '../../config/model.js';
import type { CatalogStore, StoredCatalog } from '../catalog-store.js';

/** Sources, destinations and settings on PostgreSQL, each kept as its JSON under its id. */
export class PgCatalog implements CatalogStore {
  constructor(private readonly pool: pg.Pool) {}

  async withCatalogLock<T>(fn: () => Promise<T>): Promise<T> {
    // A session of its own, not one of the pool's: \`fn\` queries through the pool, which may
    // have a single connection. Ending the session releases the lock, whatever happened.
    const client = new pg.Client(this.pool.options);
    await client.connect();
    try {
      await client.query(`SELECT pg_advisory_lock(hashtext(current_schema() || '.ferry_catalog_apply'))`);
      return await fn();
    } finally {
      await client.end().catch(() => {});
    }
  }

  async loadCatalog(): Promise<StoredCatalog> {
    const sources = await this.pool.query<{ config: string }>(`SELECT config FROM sources ORDER BY id`);
    const destinations = await this.pool.query<{ config: string }>(`SELECT config FROM destinations ORDER BY id`);
    return {
      sources: sources.rows.map((r) => JSON.parse(r.config) as SourceConfig),
      destinations: destinations.rows.map((r) => JSON.parse(r.config) as DestinationConfig),
    };
  }

  async saveSource(source: SourceConfig): Promise<void> {
    await this.pool.query(`INSERT INTO sources (id, config) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET config = excluded.config`, [
      source.id,
      JSON.stringify(source),
    ]);
  }

  async deleteSource(id: string): Promise<void> {
    await this.pool.query(`DELETE FROM sources WHERE id = $1`, [id]);
  }

  async replaceDestination(next: DestinationConfig, previous: DestinationConfig): Promise<boolean> {
    // Both sides are JSON.stringify of the same shape, so the stored text compares exactly.
    const { rowCount } = await this.pool.query(`UPDATE destinations SET config = $1 WHERE id = $2 AND config = $3`, [
      JSON.stringify(next),
      previous.id,
      JSON.stringify(previous),
    ]);
    // As saveDestination: an enabled destination written starts afresh (destination-health.ts).
    if (rowCount === 1 && next.enabled) await this.pool.query(`DELETE FROM destination_health WHERE destination_id = $1`, [next.id]);
    return rowCount === 1;
  }

  async saveDestination(destination: DestinationConfig): Promise<void> {
    await this.pool.query(`INSERT INTO destinations (id, config) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET config = excluded.config`, [
      destination.id,
      JSON.stringify(destination),
    ]);
    // An enabled destination written (re-enabled, edited) starts afresh: see destination-health.ts.
    if (destination.enabled) await this.pool.query(`DELETE FROM destination_health WHERE destination_id = $1`, [destination.id]);
  }

  async deleteDestination(id: string): Promise<void> {
    await this.pool.query(`DELETE FROM destinations WHERE id = $1`, [id]);
    // A destination made again under this id starts afresh.
    await this.pool.query(`DELETE FROM destination_health WHERE destination_id = $1`, [id]);
    await this.pool.query(`DELETE FROM rate_limit_buckets WHERE destination_id = $1`, [id]);
  }

  async getSetting(key: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ value: string }>(`SELECT value FROM settings WHERE key = $1`, [key]);
    return rows[0]?.value ?? null;
  }

  async setSetting(key: string, value: string): Promise<void> {
    await this.pool.query(`INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [key, value]);
  }
}
