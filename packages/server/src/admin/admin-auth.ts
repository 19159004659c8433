import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import type { TokenScope } from '../store/token-store.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who made an admin request: set by the admin token check, absent outside `/admin`. */
    adminToken?: { id: string; scope: TokenScope };
  }
  interface FastifyContextConfig {
    /** The scope an admin route asks for; default `read` for GET and HEAD, `admin` for any other method. */
    scope?: TokenScope;
  }
}

/** Admin tokens shorter than this are refused at start: a short token can be guessed. */
export const minAdminTokenLength = 32;

/** How an operator makes a token that passes {@link assertStrongAdminToken}. */
export const makeAdminTokenHint = "make one with `openssl rand -hex 32` or `node -e \"console.log(require('node:crypto').randomBytes(32).toString('hex'))\"`";

/** SHA-256 of an admin token; only the hash is kept, and hashes are compared in constant time. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/**
 * Refuses an admin token an attacker could guess or brute-force over HTTP.
 *
 * @throws Error naming the rule and how to make a good token; the token itself is never repeated.
 */
export function assertStrongAdminToken(token: string): void {
  if (token.length < minAdminTokenLength)
    throw new Error(`the admin token (FERRY_ADMIN_TOKEN) must be at least ${minAdminTokenLength} characters long (got ${token.length}); ${makeAdminTokenHint}`);
}

/** Methods a `read` token may use: those that change nothing. */
const readMethods = new Set(['GET', 'HEAD']);

/** Who a token value is; see `AdminTokens.identify`. */
export interface TokenIdentifier {
  identify(value: string): Promise<{ id: string; scope: TokenScope } | null>;
}

/**
 * An `onRequest` hook that lets a request through only with `Authorization: Bearer <token>`
 * of a token in force (401 `admin_unauthorized` otherwise), and only within the token's
 * scope: a `read` token may use GET and HEAD, on routes that do not ask for `admin` in their
 * `config.scope`; anything else is 403 `admin_forbidden`. Who it is lands in
 * `request.adminToken`. It runs on the head, so a refused request's body is never read: the
 * connection is closed, dropping it.
 */
export function requireAdminToken(tokens: TokenIdentifier): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  return async (request, reply) => {
    const match = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '');
    const identity = match ? await tokens.identify(match[1]!.trim()) : null;
    if (identity === null) {
      reply.header('connection', 'close');
      throw new FerryError('admin_unauthorized');
    }
    request.adminToken = identity;
    const needed = request.routeOptions.config.scope ?? (readMethods.has(request.method) ? 'read' : 'admin');
    if (needed === 'admin' && identity.scope !== 'admin') {
      reply.header('connection', 'close');
      throw new FerryError('admin_forbidden', `a ${identity.scope} token cannot ${request.method} ${request.url.split('?')[0]}; it needs an admin token`);
    }
  };
}
