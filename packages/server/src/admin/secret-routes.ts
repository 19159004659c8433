import type { FastifyInstance } from 'fastify';
import { validateDestination } from '../config/schema.js';
import { FerryError } from '../errors/error-codes.js';
import { formatUtcMs } from '../model/timestamps.js';
import type { Catalog } from '../routing/catalog.js';
import type { Clock } from '../util/clock.js';
import { refuseUnknownKeys } from './unknown-keys.js';

/** What the secret routes need. */
export interface SecretRouteDeps {
  catalog: Catalog;
  clock: Clock;
}

/** How long replaced secrets keep signing when the caller does not say: 24 hours. */
export const defaultOverlapSeconds = 86_400;
/** The longest overlap a rotation takes: 30 days. */
export const maxOverlapSeconds = 30 * 86_400;

/**
 * `POST /destinations/{id}/secrets/rotate` (docs/admin-api.md): the destination's type
 * generates a new secret, which is answered once and never shown again; the secrets it
 * replaces keep signing until the overlap ends. The request names no secret (none is sent in,
 * so an audit of request bodies holds none); the answer is `no-store`.
 */
export async function secretRoutes(app: FastifyInstance, deps: SecretRouteDeps): Promise<void> {
  const { catalog, clock } = deps;
  app.post<{ Params: { id: string } }>('/destinations/:id/secrets/rotate', async (request, reply) => {
    const body = request.body ?? {};
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new FerryError('bad_request', 'the body must be a JSON object');
    refuseUnknownKeys(body, ['kind', 'overlapSeconds'], 'key');
    const { kind, overlapSeconds = defaultOverlapSeconds } = body as { kind?: unknown; overlapSeconds?: unknown };
    if (typeof kind !== 'string' || kind === '')
      throw new FerryError('bad_request', 'kind is required: the kind of secret to rotate, e.g. "standardWebhooks" or "sharedSecret"', 'kind');
    if (typeof overlapSeconds !== 'number' || !Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > maxOverlapSeconds)
      throw new FerryError('bad_request', `overlapSeconds must be an integer from 0 to ${maxOverlapSeconds} (30 days)`, 'overlapSeconds');

    // Another node may have changed the destination since this one last read it: rotate what is stored.
    await catalog.reload();
    const current = catalog.destination(request.params.id);
    if (!current) throw new FerryError('not_found', `no destination ${request.params.id}`);
    const type = catalog.types.get(current.type);
    if (type?.rotateSecret === undefined) throw new FerryError('bad_request', `a destination of type ${current.type} has no secrets to rotate`, 'kind');
    const rotation = type.rotateSecret(current.settings, { kind, nowMs: clock.now(), overlapMs: overlapSeconds * 1000 });
    const destination = validateDestination(
      { ...current, settings: rotation.settings },
      catalog.sources().map((s) => s.id),
      catalog
        .destinations()
        .map((d) => d.id)
        .filter((id) => id !== current.id),
      catalog.types,
    );
    // Compare-and-set: of two rotations at once, only one secret may be answered, the stored one.
    if (!(await catalog.replaceDestination(destination, current)))
      throw new FerryError('conflict', `destination ${current.id} changed while its secret was being rotated; nothing was changed, rotate again`);
    const previousExpiresAt = rotation.previousExpiresAtMs === null ? null : formatUtcMs(rotation.previousExpiresAtMs);
    return reply.code(201).header('cache-control', 'no-store').send({ kind, secret: rotation.secret, previousExpiresAt });
  });
}
