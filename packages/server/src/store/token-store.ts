/** What an admin token may do: `admin` everything, `read` only look (GET and HEAD). */
export type TokenScope = 'admin' | 'read';

/** The scopes a token may have, in the order the docs list them. */
export const tokenScopes: readonly TokenScope[] = ['admin', 'read'];

/** An admin token as the store keeps it: never its value, only the value's SHA-256. */
export interface StoredToken {
  /** `tok_` and 16 random hex characters. */
  id: string;
  name: string;
  scope: TokenScope;
  createdAtMs: number;
  /** When it was last used, to the minute (see `AdminTokens`); null before its first use. */
  lastUsedAtMs: number | null;
  /** When it was revoked; a revoked token is kept, listed and refused. */
  revokedAtMs: number | null;
}

/** A token to store: its view, and the hex SHA-256 of its value. */
export interface NewToken {
  id: string;
  name: string;
  scope: TokenScope;
  createdAtMs: number;
  sha256Hex: string;
}

/**
 * The admin tokens made through the admin API (the bootstrap token is not among them). Every
 * node of a cluster looks tokens up here, so a revocation on one is seen by the others.
 */
export interface TokenStore {
  create(token: NewToken): Promise<void>;
  /** The token whose value hashes to `sha256Hex`, revoked or not; null when none does. */
  findByHash(sha256Hex: string): Promise<StoredToken | null>;
  /** Every token, revoked ones included, oldest first (those made in the same ms by id). */
  list(): Promise<StoredToken[]>;
  /**
   * Marks a token revoked at `atMs`; a token already revoked keeps its first time. False when
   * no token has that id.
   */
  revoke(id: string, atMs: number): Promise<boolean>;
  /** Records a use of the token at `atMs` (never moving `lastUsedAtMs` back). */
  touch(id: string, atMs: number): Promise<void>;
}
