import type { FastifyInstance } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import type { Catalog } from '../routing/catalog.js';

/**
 * `GET /sources/{id}/write-key` (`admin` tokens only): the one route that answers a secret
 * that already exists, so that a source's owner can copy its write key into their app from
 * the dashboard. Not cached (`Cache-Control: no-store`), and written to the audit log as
 * `source.reveal-write-key` like a change, the key itself never (the entry holds the source
 * as the API shows it, with its hint).
 */
export async function writeKeyRoutes(app: FastifyInstance, catalog: Catalog): Promise<void> {
  app.get<{ Params: { id: string } }>(
    '/sources/:id/write-key',
    { config: { scope: 'admin', audit: { always: true, action: 'source.reveal-write-key' } } },
    async (request, reply) => {
      // The key in the store, not this node's copy: another node may have changed it since.
      await catalog.reload();
      const source = catalog.source(request.params.id);
      if (!source) throw new FerryError('not_found', `no source ${request.params.id}`);
      return reply.header('cache-control', 'no-store').send({ writeKey: source.writeKey });
    },
  );
}
