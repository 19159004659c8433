import type { FastifyInstance } from 'fastify';

/**
 * `GET /session`: who the caller is, `{"tokenId","scope"}` (`bootstrap` for the bootstrap
 * token), so that a client such as the dashboard can hide the changes a `read` token would be
 * refused. Any token may ask; the value itself is never repeated.
 */
export async function sessionRoutes(app: FastifyInstance): Promise<void> {
  app.get('/session', async (request) => {
    // The token check ran before any route: a request that got here has its identity.
    const { id, scope } = request.adminToken!;
    return { tokenId: id, scope };
  });
}
