import type pg from 'pg';
import type { DestinationConfig } from '../../config/model.js';
import {
  toDestinationHealth,
  type AutoDisabled,
  type DestinationHealth,
  type DestinationHealthRow,
  type DestinationHealthStore,
} from '../destination-health.js';
import { inTransaction } from './pg-pools.js';

/** Destinations' fortunes and Ferry's disabling on PostgreSQL (`destination_health`). */
export class PgDestinationHealth implements DestinationHealthStore {
  constructor(private readonly pool: pg.Pool) {}

  async recordFailure(destinationId: string, nowMs: number): Promise<number> {
    const { rows } = await this.pool.query<{ failing_since: string }>(
      `INSERT INTO destination_health AS h (destination_id, failing_since) VALUES ($1, $2)
       ON CONFLICT (destination_id) DO UPDATE SET failing_since = COALESCE(h.failing_since, excluded.failing_since)
       RETURNING failing_since`,
      [destinationId, nowMs],
    );
    return Number(rows[0]!.failing_since);
  }

  async recordSuccess(destinationId: string): Promise<void> {
    // No write at all for a destination that was not failing: the common case.
    await this.pool.query(`UPDATE destination_health SET failing_since = NULL WHERE destination_id = $1 AND failing_since IS NOT NULL`, [destinationId]);
  }

  autoDisable(args: { destinationId: string; failingSinceAtOrBeforeMs: number; nowMs: number; reason: string }): Promise<AutoDisabled | undefined> {
    return inTransaction(this.pool, async (client) => {
      // The destination's row first, as saveDestination takes them, then its record.
      const config = await client.query<{ config: string }>(`SELECT config FROM destinations WHERE id = $1 FOR UPDATE`, [args.destinationId]);
      const health = await client.query<{ failing_since: string | null }>(`SELECT failing_since FROM destination_health WHERE destination_id = $1 FOR UPDATE`, [
        args.destinationId,
      ]);
      if (config.rows.length === 0 || health.rows.length === 0) return undefined;
      const before = JSON.parse(config.rows[0]!.config) as DestinationConfig;
      const since = health.rows[0]!.failing_since;
      if (!before.enabled || since === null || Number(since) > args.failingSinceAtOrBeforeMs) return undefined;
      const after: DestinationConfig = { ...before, enabled: false };
      await client.query(`UPDATE destinations SET config = $2 WHERE id = $1`, [args.destinationId, JSON.stringify(after)]);
      await client.query(`UPDATE destination_health SET disabled_at = $2, disabled_reason = $3 WHERE destination_id = $1`, [
        args.destinationId,
        args.nowMs,
        args.reason,
      ]);
      return { before, after, failingSinceMs: Number(since) };
    });
  }

  async get(destinationId: string): Promise<DestinationHealth | undefined> {
    const { rows } = await this.pool.query<DestinationHealthRow>(`SELECT * FROM destination_health WHERE destination_id = $1`, [destinationId]);
    return rows[0] === undefined ? undefined : toDestinationHealth(rows[0]);
  }

  async list(): Promise<DestinationHealth[]> {
    const { rows } = await this.pool.query<DestinationHealthRow>(`SELECT * FROM destination_health`);
    return rows.map(toDestinationHealth);
  }
}
