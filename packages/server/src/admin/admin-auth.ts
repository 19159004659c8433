import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { FerryError } from '../errors/error-codes.js';

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

/**
 * An `onRequest` hook that lets a request through only with `Authorization: Bearer <token>`
 * whose hash matches. Both sides are SHA-256 digests of the same length, so
 * `timingSafeEqual` compares them in constant time whatever the caller sent. It runs on the
 * head, so a refused request's body is never read: the connection is closed, dropping it.
 */
export function requireAdminToken(adminTokenHash: Buffer): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  return async (request, reply) => {
    const match = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '');
    if (!match || !timingSafeEqual(hashToken(match[1]!.trim()), adminTokenHash)) {
      reply.header('connection', 'close');
      throw new FerryError('admin_unauthorized');
    }
  };
}
