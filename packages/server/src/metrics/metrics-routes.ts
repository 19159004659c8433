import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requireAdminToken, type TokenIdentifier } from '../admin/admin-auth.js';
import type { FerryMetrics } from './ferry-metrics.js';

/** What `GET /metrics` needs. */
export interface MetricsRouteDeps {
  metrics: Pick<FerryMetrics, 'scrape'>;
  /** The admin tokens in force: a scrape must present one (a `read` token will do) unless `public`. */
  tokens: TokenIdentifier;
  /** Open to anyone who reaches the port (`FERRY_METRICS_PUBLIC=1`). Default false. */
  public?: boolean;
}

/** The check a scrape passes: any admin token in force, of either scope (a scrape is a read). */
export function metricsGuard(deps: MetricsRouteDeps): ((request: FastifyRequest, reply: FastifyReply) => Promise<void>) | undefined {
  return deps.public === true ? undefined : requireAdminToken(deps.tokens);
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
