import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { StoredToken, TokenScope, TokenStore } from '../store/token-store.js';
import type { Clock } from '../util/clock.js';
import { hashToken } from './admin-auth.js';

/** Who made an admin request: a token's id and scope. */
export interface AdminIdentity {
  /** `bootstrap` for `FERRY_ADMIN_TOKEN` (or the generated token), else the `tok_` id of a token made through the API. */
  id: string;
  scope: TokenScope;
}

/** The id the bootstrap token (`FERRY_ADMIN_TOKEN`, or the one generated at the first start) goes by. */
export const bootstrapTokenId = 'bootstrap';

/**
 * How long a token looked up in the store is trusted without asking again, by default: the
 * bound on how late another node of a cluster refuses a token revoked elsewhere. The node
 * that revokes refuses it at once.
 */
export const defaultTokenCacheMs = 2000;

/** A token's use is written to the store at most once per this many ms (per node), not at every request. */
export const lastUsedResolutionMs = 60_000;

/** Tokens kept in the cache at most; the least recently looked up goes first. */
const cacheEntries = 1000;

/** What {@link AdminTokens} is built from. */
export interface AdminTokensDeps {
  store: TokenStore;
  /** SHA-256 of the bootstrap token; its value is never kept. */
  bootstrapHash: Buffer;
  clock: Clock;
  /** See {@link defaultTokenCacheMs}. */
  cacheMs: number;
  logger: Logger;
}

/**
 * The admin tokens in force: the bootstrap token (scope `admin`, never stored as a token) and
 * those made through the API, kept hashed in the store. A token looked up in the store is
 * cached for `cacheMs`, so a busy dashboard costs no query per request, and a revocation made
 * on another node is seen within that time.
 */
export class AdminTokens {
  private readonly cache = new Map<string, { token: StoredToken; fetchedAtMs: number }>();
  /** When this node last recorded each token's use. */
  private readonly touched = new Map<string, number>();

  constructor(private readonly deps: AdminTokensDeps) {}

  /**
   * Who a token value is, or null when it is no token in force (unknown or revoked). The
   * bootstrap hash is compared in constant time; a stored token is found by its hash.
   *
   * @throws the store's error when it cannot be read (a 503).
   */
  async identify(value: string): Promise<AdminIdentity | null> {
    const hash = hashToken(value);
    if (timingSafeEqual(hash, this.deps.bootstrapHash)) return { id: bootstrapTokenId, scope: 'admin' };
    const token = await this.lookUp(hash.toString('hex'));
    if (token === null || token.revokedAtMs !== null) return null;
    await this.recordUse(token);
    return { id: token.id, scope: token.scope };
  }

  /** Makes a token; its value is returned here once and never kept. */
  async create(name: string, scope: TokenScope): Promise<{ token: StoredToken; value: string }> {
    const value = `fat_${randomBytes(32).toString('base64url')}`;
    const token: StoredToken = {
      id: `tok_${randomBytes(8).toString('hex')}`,
      name,
      scope,
      createdAtMs: this.deps.clock.now(),
      lastUsedAtMs: null,
      revokedAtMs: null,
    };
    await this.deps.store.create({ id: token.id, name, scope, createdAtMs: token.createdAtMs, sha256Hex: hashToken(value).toString('hex') });
    return { token, value };
  }

  /** Every token made through the API, revoked ones included, oldest first. */
  list(): Promise<StoredToken[]> {
    return this.deps.store.list();
  }

  /** The token with this id, or null. */
  async get(id: string): Promise<StoredToken | null> {
    return (await this.deps.store.list()).find((t) => t.id === id) ?? null;
  }

  /** Revokes a token: refused on this node from now on. False when no token has that id. */
  async revoke(id: string): Promise<boolean> {
    const found = await this.deps.store.revoke(id, this.deps.clock.now());
    for (const [hash, entry] of this.cache) if (entry.token.id === id) this.cache.delete(hash);
    return found;
  }

  private async lookUp(hashHex: string): Promise<StoredToken | null> {
    const now = this.deps.clock.now();
    const cached = this.cache.get(hashHex);
    if (cached && now - cached.fetchedAtMs < this.deps.cacheMs) return cached.token;
    this.cache.delete(hashHex);
    // Unknown hashes are not cached: a caller trying values would only fill the cache.
    const token = await this.deps.store.findByHash(hashHex);
    if (token === null) return null;
    if (this.cache.size >= cacheEntries) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(hashHex, { token, fetchedAtMs: now });
    return token;
  }

  private async recordUse(token: StoredToken): Promise<void> {
    const now = this.deps.clock.now();
    const last = Math.max(token.lastUsedAtMs ?? -Infinity, this.touched.get(token.id) ?? -Infinity);
    if (now - last < lastUsedResolutionMs) return;
    this.touched.set(token.id, now);
    try {
      await this.deps.store.touch(token.id, now);
    } catch (err) {
      // A missed record of use must not refuse the request it would have recorded.
      this.deps.logger.warn({ err, tokenId: token.id }, 'could not record an admin token use');
    }
  }
}
