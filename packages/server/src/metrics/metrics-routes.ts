import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requireAdminToken } from '../admin/admin-auth.js';
import type { FerryMetrics } from './ferry-metrics.js';

/** What `GET /metrics` needs. */
export interface MetricsRouteDeps {
  metrics: Pick<FerryMetrics, 'scrape'>;
  /** The admin token's hash: a scrape must present the token unless `public`. */
  adminTokenHash: Buffer;
  /** Open to anyone who reaches the port (`FERRY_METRICS_PUBLIC=1`). Default false. */
  public?: boolean;
}

/**
 * The check a scrape passes: the admin token's, through this one function so that the rules
 * of who may read (scoped tokens) change in one place.
 */
export function metricsGuard(deps: MetricsRouteDeps): ((request: FastifyRequest, reply: FastifyReply) => Promise<void>) | undefined {
  return deps.public === true ? undefined : requireAdminToken(deps.adminTokenHash);
}

/**
 * `GET /metrics`: every series in the Prometheus text format. Registered by a function of its
 * own so that it can live on whichever listener serves the admin API.
 */
export async function metricsRoutes(app: FastifyInstance, deps: MetricsRouteDeps): Promise<void> {
  const guard = metricsGuard(deps);
  app.get('/metrics', { onRequest: guard === undefined ? [] : [guard] }, async (_request, reply) => {
    const { contentType, text } = await deps.metrics.scrape();
    return reply.header('content-type', contentType).header('cache-control', 'no-store').send(text);
  });
}
