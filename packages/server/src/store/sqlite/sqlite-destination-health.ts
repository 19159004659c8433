import type Database from 'better-sqlite3';
import type { DestinationConfig } from '../../config/model.js';
import {
  toDestinationHealth,
  type AutoDisabled,
  type DestinationHealth,
  type DestinationHealthRow,
  type DestinationHealthStore,
} from '../destination-health.js';

/** Destinations' fortunes and Ferry's disabling on SQLite (`destination_health`). */
export class SqliteDestinationHealth implements DestinationHealthStore {
  constructor(private readonly db: Database.Database) {}

  async recordFailure(destinationId: string, nowMs: number): Promise<number> {
    const row = this.db
      .prepare(
        `INSERT INTO destination_health (destination_id, failing_since) VALUES (?, ?)
         ON CONFLICT (destination_id) DO UPDATE SET failing_since = COALESCE(failing_since, excluded.failing_since)
         RETURNING failing_since`,
      )
      .get(destinationId, nowMs) as { failing_since: number };
    return row.failing_since;
  }

  async recordSuccess(destinationId: string): Promise<void> {
    this.db.prepare(`UPDATE destination_health SET failing_since = NULL WHERE destination_id = ? AND failing_since IS NOT NULL`).run(destinationId);
  }

  async autoDisable(args: { destinationId: string; failingSinceAtOrBeforeMs: number; nowMs: number; reason: string }): Promise<AutoDisabled | undefined> {
    return this.db.transaction((): AutoDisabled | undefined => {
      const config = this.db.prepare(`SELECT config FROM destinations WHERE id = ?`).get(args.destinationId) as { config: string } | undefined;
      const health = this.db.prepare(`SELECT failing_since FROM destination_health WHERE destination_id = ?`).get(args.destinationId) as
        { failing_since: number | null } | undefined;
      if (!config || !health) return undefined;
      const before = JSON.parse(config.config) as DestinationConfig;
      const since = health.failing_since;
      if (!before.enabled || since === null || since > args.failingSinceAtOrBeforeMs) return undefined;
      const after: DestinationConfig = { ...before, enabled: false };
      this.db.prepare(`UPDATE destinations SET config = ? WHERE id = ?`).run(JSON.stringify(after), args.destinationId);
      this.db
        .prepare(`UPDATE destination_health SET disabled_at = ?, disabled_reason = ? WHERE destination_id = ?`)
        .run(args.nowMs, args.reason, args.destinationId);
      return { before, after, failingSinceMs: since };
    })();
  }

  async get(destinationId: string): Promise<DestinationHealth | undefined> {
    const row = this.db.prepare(`SELECT * FROM destination_health WHERE destination_id = ?`).get(destinationId) as DestinationHealthRow | undefined;
    return row === undefined ? undefined : toDestinationHealth(row);
  }

  async list(): Promise<DestinationHealth[]> {
    return (this.db.prepare(`SELECT * FROM destination_health`).all() as DestinationHealthRow[]).map(toDestinationHealth);
  }
}
