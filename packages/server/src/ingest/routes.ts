import type { FastifyInstance } from 'fastify';
import { callTypes, type CallType } from './message.js';
import { ingestLimits } from './read-body.js';
import { ingestRequest, type IngestDeps } from './ingest-request.js';

/**
 * The Segment-compatible tracking API: `/v1/batch` (and its legacy name `/v1/import`) and one
 * path per call type. Bodies are taken as raw bytes whatever their declared type, so that the
 * pipeline can answer wrong types, gzip and bad JSON with its own stable codes.
 */
export async function ingestRoutes(app: FastifyInstance, deps: IngestDeps): Promise<void> {
  app.removeAllContentTypeParsers();
  // Raw bytes on the wire may be gzip; the decompressed limit is enforced by the pipeline.
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: ingestLimits.maxRequestBytes + 1024 }, (_req, body, done) =>
    done(null, body),
  );
  const routes: [string, 'batch' | CallType][] = [
    ['/v1/batch', 'batch'],
    ['/v1/import', 'batch'],
    ...callTypes.map((t): [string, CallType] => [`/v1/${t}`, t]),
  ];
  for (const [url, route] of routes) {
    app.post(url, async (request, reply) => {
      const answer = await ingestRequest(
        {
          route,
          rawBody: request.body as Buffer | undefined,
          headers: {
            'content-encoding': request.headers['content-encoding'],
            authorization: request.headers.authorization,
          },
          ip: request.ip,
        },
        deps,
      );
      return reply.code(answer.status).send(answer.body);
    });
  }
}
