import { randomBytes } from 'node:crypto';
import type { CatalogStore } from '../store/catalog-store.js';
import { hashToken } from './admin-auth.js';

/** The store setting that keeps a generated token's hash. */
const adminTokenSetting = 'admin_token_sha256';

/** The hash the admin API checks tokens against, and the token made when none was given. */
export interface AdminTokenInForce {
  hash: Buffer;
  /** Set when no token was given and none was stored: shown once to the operator. */
  generated: string | undefined;
  /**
   * Writes what the choice needs to the store: a generated token's hash, or the retirement of
   * a stored one when a token was given. Called once the server listens, so a start refused
   * before that (the demo-key guard, a port in use) never stores the hash of a token that
   * nobody was shown.
   */
  store(): Promise<void>;
}

/**
 * The admin token in force: the one given (already checked by `assertStrongAdminToken`), else
 * the one whose hash the store keeps, else a new one. Nothing is written until
 * {@link AdminTokenInForce.store} is called.
 */
export async function adminTokenInForce(store: Pick<CatalogStore, 'getSetting' | 'setSetting'>, given: string | undefined): Promise<AdminTokenInForce> {
  if (given !== undefined) {
    // A token set by the operator retires a generated one (perhaps leaked): unsetting it
    // later makes a new token, never brings the old one back.
    return { hash: hashToken(given), generated: undefined, store: () => store.setSetting(adminTokenSetting, '') };
  }
  const stored = await store.getSetting(adminTokenSetting);
  if (stored) return { hash: Buffer.from(stored, 'hex'), generated: undefined, store: async () => {} };
  const generated = `fat_${randomBytes(24).toString('base64url')}`;
  const hash = hashToken(generated);
  return { hash, generated, store: () => store.setSetting(adminTokenSetting, hash.toString('hex')) };
}
