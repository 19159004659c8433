import type pg from 'pg';
import { tokenColumns, toStoredToken, type TokenRow } from '../token-rows.js';
import type { NewToken, StoredToken, TokenStore } from '../token-store.js';

/** Admin tokens on PostgreSQL (`admin_tokens`), found by their values' SHA-256; every node reads the same rows. */
export class PgTokenStore implements TokenStore {
  constructor(private readonly pool: pg.Pool) {}

  async create(token: NewToken): Promise<void> {
    await this.pool.query(`INSERT INTO admin_tokens (id, name, scope, token_sha256, created_at) VALUES ($1, $2, $3, $4, $5)`, [
      token.id,
      token.name,
      token.scope,
      token.sha256Hex,
      token.createdAtMs,
    ]);
  }

  async findByHash(sha256Hex: string): Promise<StoredToken | null> {
    const { rows } = await this.pool.query<TokenRow>(`SELECT ${tokenColumns} FROM admin_tokens WHERE token_sha256 = $1`, [sha256Hex]);
    return rows[0] ? toStoredToken(rows[0]) : null;
  }

  async list(): Promise<StoredToken[]> {
    const { rows } = await this.pool.query<TokenRow>(`SELECT ${tokenColumns} FROM admin_tokens ORDER BY created_at, id`);
    return rows.map(toStoredToken);
  }

  async revoke(id: string, atMs: number): Promise<boolean> {
    const result = await this.pool.query(`UPDATE admin_tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2`, [atMs, id]);
    return (result.rowCount ?? 0) > 0;
  }

  async touch(id: string, atMs: number): Promise<void> {
    await this.pool.query(`UPDATE admin_tokens SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)`, [atMs, id]);
  }
}
