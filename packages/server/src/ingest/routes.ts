import type { FastifyInstance } from 'fastify';
import type { BodyBudget } from './body-budget.js';
import { ingestAdmission } from './ingest-admission.js';
import { callTypes, type CallType } from '../model/message.js';
import { ingestLimits } from './read-body.js';
import { ingestRequest, type IngestDeps } from './ingest-request.js';
import { ProcessingGate } from './processing-gate.js';

/**
 * Request-body bytes processed (parsed, normalised, committed) at once; the others wait with
 * their body in the budget. A 500 KB batch takes up to about 20 times its size on the heap
 * while it is processed (docs/operations.md), so 3 MiB bounds that memory to some tens of MiB
 * (6 batches of the largest size at once), while a hundred batches of typical size (tens of
 * KB) go through together and keep sharing the store's commits.
 */
export const maxIngestProcessingBytes = 3 * 1024 * 1024;

/** What a body weighs in the gate: a gzip body may unpack to the request limit, so it weighs that. */
function processingWeight(body: Buffer | undefined, contentEncoding: string | undefined): number {
  if (contentEncoding !== undefined && contentEncoding.trim() !== '' && contentEncoding.trim().toLowerCase() !== 'identity')
    return ingestLimits.maxRequestBytes;
  return body?.length ?? 0;
}

/**
 * The Segment-compatible tracking API: `/v1/batch` (and its legacy name `/v1/import`) and one
 * path per call type. Bodies are taken as raw bytes whatever their declared type, so that the
 * pipeline can answer gzip and bad JSON with its own stable codes. Before a body is read, each
 * request passes {@link ingestAdmission}: a stranger's key is refused, and the bodies held at
 * once stay within `budget`. At most {@link maxIngestProcessingBytes} of bodies are processed at once.
 */
export async function ingestRoutes(app: FastifyInstance, deps: IngestDeps, budget: BodyBudget): Promise<void> {
  const gate = new ProcessingGate(maxIngestProcessingBytes);
  app.removeAllContentTypeParsers();
  // Raw bytes on the wire may be gzip; the decompressed limit is enforced by the pipeline.
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: ingestLimits.maxRawRequestBytes }, (_req, body, done) => done(null, body));
  app.addHook('onRequest', ingestAdmission({ catalog: deps.catalog, budget: budget, events: deps.events }));
  // Fastify answers 415 to a Content-Type it cannot parse (an empty one, or `json`) before any
  // parser runs. Ingestion ignores the label, so it is dropped before that check.
  app.addHook('onRequest', (request, _reply, done) => {
    delete request.headers['content-type'];
    done();
  });
  const routes: [string, 'batch' | CallType][] = [
    ['/v1/batch', 'batch'],
    ['/v1/import', 'batch'],
    ...callTypes.map((t): [string, CallType] => [`/v1/${t}`, t]),
  ];
  for (const [url, route] of routes) {
    app.post(url, async (request, reply) => {
      const rawBody = request.body as Buffer | undefined;
      const answer = await gate.run(processingWeight(rawBody, request.headers['content-encoding']), () =>
        ingestRequest(
          {
            route,
            rawBody,
            headers: {
              'content-encoding': request.headers['content-encoding'],
              authorization: request.headers.authorization,
            },
            ip: request.ip,
            requestId: request.id,
          },
          deps,
        ),
      );
      return reply.code(answer.status).send(answer.body);
    });
  }
}
