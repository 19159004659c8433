import type Database from 'better-sqlite3';
import { tokenColumns, toStoredToken, type TokenRow } from '../token-rows.js';
import type { NewToken, StoredToken, TokenStore } from '../token-store.js';

/** Admin tokens on SQLite (`admin_tokens`), found by their values' SHA-256. */
export class SqliteTokenStore implements TokenStore {
  constructor(private readonly db: Database.Database) {}

  async create(token: NewToken): Promise<void> {
    this.db
      .prepare(`INSERT INTO admin_tokens (id, name, scope, token_sha256, created_at) VALUES (?, ?, ?, ?, ?)`)
      .run(token.id, token.name, token.scope, token.sha256Hex, token.createdAtMs);
  }

  async findByHash(sha256Hex: string): Promise<StoredToken | null> {
    const row = this.db.prepare(`SELECT ${tokenColumns} FROM admin_tokens WHERE token_sha256 = ?`).get(sha256Hex) as TokenRow | undefined;
    return row ? toStoredToken(row) : null;
  }

  async list(): Promise<StoredToken[]> {
    return (this.db.prepare(`SELECT ${tokenColumns} FROM admin_tokens ORDER BY created_at, id`).all() as TokenRow[]).map(toStoredToken);
  }

  async revoke(id: string, atMs: number): Promise<boolean> {
    return this.db.prepare(`UPDATE admin_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`).run(atMs, id).changes > 0;
  }

  async touch(id: string, atMs: number): Promise<void> {
    this.db.prepare(`UPDATE admin_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`).run(atMs, id, atMs);
  }
}
