import type { StoredToken, TokenScope } from './token-store.js';

/** A row of `admin_tokens` as both dialects read it, without the hash. Times in ms since the epoch. */
export interface TokenRow {
  id: string;
  name: string;
  scope: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** The columns of {@link TokenRow}, for a SELECT. */
export const tokenColumns = 'id, name, scope, created_at, last_used_at, revoked_at';

export function toStoredToken(row: TokenRow): StoredToken {
  return {
    id: row.id,
    name: row.name,
    scope: row.scope as TokenScope,
    createdAtMs: row.created_at,
    lastUsedAtMs: row.last_used_at,
    revokedAtMs: row.revoked_at,
  };
}
