import type { FastifyInstance } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import { tokenScopes, type StoredToken, type TokenScope } from '../store/token-store.js';
import { bootstrapTokenId, type AdminTokens } from './admin-tokens.js';
import { refuseUnknownKeys } from './unknown-keys.js';

/** A token's name is for people: short, and never empty. */
const maxNameLength = 100;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** A token as the admin API shows it: never its value, never its hash. */
export function tokenView(token: StoredToken) {
  return {
    id: token.id,
    name: token.name,
    scope: token.scope,
    createdAt: iso(token.createdAtMs)!,
    lastUsedAt: iso(token.lastUsedAtMs),
    revokedAt: iso(token.revokedAtMs),
  };
}

/**
 * Admin routes of tokens, every one for `admin` tokens only (a `read` token may not see who
 * else holds access): `POST /tokens` makes one and answers its value, once; `GET /tokens`
 * lists them, revoked ones included; `DELETE /tokens/{id}` revokes one. The bootstrap token
 * is none of them: it is set where the server is started.
 */
export async function tokenRoutes(app: FastifyInstance, tokens: AdminTokens): Promise<void> {
  const adminOnly = { scope: 'admin' as const };
  app.post('/tokens', { config: adminOnly }, async (request, reply) => {
    const body = request.body as { name?: unknown; scope?: unknown } | null;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new FerryError('bad_request', 'the body must be a JSON object');
    refuseUnknownKeys(body, ['name', 'scope'], 'key');
    const { name, scope } = body;
    if (typeof name !== 'string' || name.trim() === '' || name.length > maxNameLength)
      throw new FerryError('bad_request', `name must be a non-empty string of at most ${maxNameLength} characters`, 'name');
    if (!tokenScopes.includes(scope as TokenScope)) throw new FerryError('bad_request', `scope must be one of ${tokenScopes.join(', ')}`, 'scope');
    const made = await tokens.create(name, scope as TokenScope);
    return reply.code(201).send({ ...tokenView(made.token), token: made.value });
  });
  app.get('/tokens', { config: adminOnly }, async () => ({ tokens: (await tokens.list()).map(tokenView) }));
  app.delete<{ Params: { id: string } }>('/tokens/:id', { config: adminOnly }, async (request, reply) => {
    const { id } = request.params;
    if (id === bootstrapTokenId)
      throw new FerryError('conflict', 'the bootstrap token cannot be revoked through the API: restart with another FERRY_ADMIN_TOKEN (docs/operations.md)');
    if (!(await tokens.revoke(id))) throw new FerryError('not_found', `no token ${id}`);
    return reply.code(204).send();
  });
}
