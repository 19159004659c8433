import type pg from 'pg';
import { usableFrom, type RateLimitBuckets, type TokenGrant, type TokenRequest } from '../rate-limit-buckets.js';

/*
 * One statement, under the row's lock: refill since the last take (never for a clock that
 * runs behind the last taker's, whose time is kept), cap at the burst, take the grant. A
 * fresh bucket starts full.
 */
const takeSql = `
INSERT INTO rate_limit_buckets AS b (destination_id, tokens, refilled_at)
VALUES ($1, $4::float8 - $2::float8, $5::bigint)
ON CONFLICT (destination_id) DO UPDATE SET
  tokens = LEAST($4::float8, b.tokens + GREATEST(0, $5::bigint - b.refilled_at) * $3::float8 / 1000.0) - $2::float8,
  refilled_at = GREATEST(b.refilled_at, $5::bigint)
RETURNING tokens, refilled_at`;

/** The rate limits' shared buckets on PostgreSQL (`rate_limit_buckets`). */
export class PgRateLimitBuckets implements RateLimitBuckets {
  constructor(private readonly pool: pg.Pool) {}

  async take(request: TokenRequest): Promise<TokenGrant> {
    const { rows } = await this.pool.query<{ tokens: number; refilled_at: string }>(takeSql, [
      request.destinationId,
      request.tokens,
      request.perSecond,
      request.burst,
      request.nowMs,
    ]);
    const row = rows[0]!;
    return { tokens: request.tokens, usableFromMs: usableFrom(Number(row.tokens), Number(row.refilled_at), request) };
  }
}
