import type { FastifyInstance } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import type { ReplayJobRunner, ReplaySettings } from '../replay/replay-job-runner.js';
import type { Catalog } from '../routing/catalog.js';
import type { ReplayFilter, ReplayJobRecord, Store } from '../store/store.js';
import { iso } from '../store/rows.js';
import type { Clock } from '../util/clock.js';
import { errorClasses, knownIds } from './delivery-routes.js';
import { objectBody, optionalChoice, optionalTime, optionalTimeCursor, pageLimit, timeCursor } from './query-params.js';
import { refuseUnknownKeys } from './unknown-keys.js';

/** What the replay routes need. */
export interface ReplayRouteDeps {
  store: Store;
  catalog: Catalog;
  clock: Clock;
  jobs: ReplayJobRunner;
  settings: ReplaySettings;
  /** Called when jobs became due (a replay), so the worker looks at once. */
  onQueued?: () => void;
}

const bodyKeys = ['ids', 'destinationId', 'since', 'until', 'errorClass', 'dryRun'];

/** A replay job as the admin API shows it: its kind, its filter as it was asked, its cursor, times in ISO 8601. */
export function toReplayJobView(job: ReplayJobRecord) {
  const common = {
    id: job.id,
    kind: job.kind,
    status: job.status,
    total: job.total,
    replayed: job.replayed,
    createdAt: iso(job.createdAtMs)!,
    finishedAt: iso(job.finishedAtMs),
    error: job.error,
  };
  if (job.kind === 'archive') {
    const f = job.filter;
    return {
      ...common,
      skipped: job.skipped,
      cursor: job.cursor.receivedAtMs === null ? null : { receivedAt: iso(job.cursor.receivedAtMs)!, eventId: job.cursor.id },
      filter: {
        destinationId: f.destinationId,
        sourceIds: f.sourceIds,
        since: iso(f.sinceMs)!,
        until: iso(f.untilMs)!,
        ...(f.ratePerSecond === undefined ? {} : { ratePerSecond: f.ratePerSecond }),
      },
    };
  }
  const f = job.filter;
  return {
    ...common,
    cursor: { afterId: job.cursor.id },
    filter: {
      ...(f.ids === undefined ? {} : { ids: f.ids }),
      ...(f.destinationId === undefined ? {} : { destinationId: f.destinationId }),
      ...(f.sinceMs === undefined ? {} : { since: iso(f.sinceMs) }),
      ...(f.untilMs === undefined ? {} : { until: iso(f.untilMs) }),
      ...(f.errorClass === undefined ? {} : { errorClass: f.errorClass }),
    },
  };
}

/**
 * Bulk replay of dead letters (`POST /dead-letters/replay`): a dry run that counts, a replay
 * at once up to `settings.inlineLimit` letters, and beyond that a replay job, run in batches,
 * whose progress `GET /replay-jobs/{id}` reads back.
 */
export async function replayRoutes(app: FastifyInstance, deps: ReplayRouteDeps): Promise<void> {
  const { store, catalog, clock, jobs, settings } = deps;
  const known = knownIds(catalog);

  app.post('/dead-letters/replay', async (request, reply) => {
    const body = objectBody(request.body ?? {});
    refuseUnknownKeys(body, bodyKeys, 'key');
    let ids: number[] | undefined;
    if (body.ids !== undefined) {
      if (!Array.isArray(body.ids) || body.ids.length > 1000 || !body.ids.every((v) => Number.isSafeInteger(v)))
        throw new FerryError('bad_request', 'ids must be a list of at most 1000 delivery ids', 'ids');
      ids = body.ids as number[];
    }
    if (body.dryRun !== undefined && typeof body.dryRun !== 'boolean') throw new FerryError('bad_request', 'dryRun must be true or false', 'dryRun');
    const sinceMs = optionalTime(body.since, 'since');
    const untilMs = optionalTime(body.until, 'until');
    if (sinceMs !== undefined && untilMs !== undefined && untilMs <= sinceMs) throw new FerryError('bad_request', 'until must be after since', 'until');
    const filter: ReplayFilter = {
      ...(ids === undefined ? {} : { ids }),
      ...definedEntry('destinationId', known.destination(body.destinationId)),
      ...definedEntry('sinceMs', sinceMs),
      ...definedEntry('untilMs', untilMs),
      ...definedEntry('errorClass', optionalChoice(body.errorClass, 'errorClass', errorClasses)),
    };
    const existing = { ...filter, destinationIdsIn: catalog.destinations().map((d) => d.id) };
    const matching = await store.countReplayable(existing);
    if (body.dryRun === true) {
      request.auditSkip = true;
      return { dryRun: true, wouldReplay: matching };
    }
    if (matching <= settings.inlineLimit) {
      const replayed = await store.replay(existing, clock.now());
      if (replayed > 0) deps.onQueued?.();
      return { replayed };
    }
    const job = await jobs.submit(filter, matching);
    return reply.code(202).send({ job: toReplayJobView(job) });
  });

  app.get<{ Querystring: { after?: string; limit?: string } }>('/replay-jobs', { config: { query: ['after', 'limit'] } }, async (request) => {
    const limit = pageLimit(request.query.limit);
    const found = await store.listReplayJobs({ after: optionalTimeCursor(request.query.after), limit });
    const last = found.at(-1);
    return { jobs: found.map(toReplayJobView), next: found.length === limit && last ? timeCursor(last) : null };
  });

  app.get<{ Params: { id: string } }>('/replay-jobs/:id', async (request) => {
    const job = await store.getReplayJob(request.params.id);
    if (!job) throw new FerryError('not_found', `no replay job ${request.params.id}`);
    return toReplayJobView(job);
  });

  // Idempotent: a job already over is answered as it is, its status saying how it ended.
  app.post<{ Params: { id: string } }>('/replay-jobs/:id/cancel', async (request) => {
    refuseUnknownKeys(objectBody(request.body ?? {}), [], 'key');
    const job = await jobs.cancel(request.params.id);
    if (!job) throw new FerryError('not_found', `no replay job ${request.params.id}`);
    return toReplayJobView(job);
  });
}

/** `{ [key]: value }`, or nothing when the value is undefined (an optional property left out, not set to undefined). */
function definedEntry<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
