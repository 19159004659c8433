import type { FastifyInstance } from 'fastify';
import type { AudienceStore } from '../store/audience-store.js';
import type { AudienceSync } from '../audiences/audience-sync.js';
import { notFound } from '../http/not-found.js';
import { requireAdminToken } from './admin-auth.js';
import { audienceRoutes } from './audience-routes.js';
import { adminRoutes, type AdminDeps } from './routes.js';
import { secretRoutes } from './secret-routes.js';
import { refuseUnknownKeys } from './unknown-keys.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Query parameters an admin route accepts; any other is refused with `unknown_parameter`. None when absent. */
    query?: readonly string[];
  }
}

/** What the whole admin surface needs: the admin routes' dependencies, plus audiences. */
export interface AdminApiDeps extends AdminDeps {
  audiences: { store: AudienceStore; sync: AudienceSync };
}

/** The path every admin route lives under. */
export const adminPrefix = '/admin';

/**
 * Everything under `/admin`: the token is checked before anything else, unknown paths
 * included, so that the admin surface cannot be mapped without it (an unknown path answers
 * 404 only to a caller holding the token). A query parameter a route does not list in its
 * `config.query` is refused, on every route.
 */
export async function registerAdminApi(app: FastifyInstance, deps: AdminApiDeps): Promise<void> {
  await app.register(
    async (admin) => {
      admin.addHook('onRequest', requireAdminToken(deps.adminTokenHash));
      admin.addHook('preValidation', async (request) => {
        if (!request.is404) refuseUnknownKeys(request.query as object, request.routeOptions.config.query ?? [], 'query parameter');
      });
      // The media type of RFC 7396, which PATCH /destinations/{id} implements; read as JSON.
      admin.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, admin.getDefaultJsonParser('error', 'error'));
      admin.setNotFoundHandler((request, reply) => reply.code(404).send(notFound(request.method, request.url).toBody()));
      await admin.register(
        async (v1) => {
          await adminRoutes(v1, deps);
          await secretRoutes(v1, { catalog: deps.catalog, clock: deps.clock });
          await audienceRoutes(v1, { audiences: deps.audiences.store, sync: deps.audiences.sync, catalog: deps.catalog, clock: deps.clock });
        },
        { prefix: '/v1' },
      );
    },
    { prefix: adminPrefix },
  );
}
