import type { FastifyInstance } from 'fastify';
import type { DestinationConfig } from '../config/model.js';
import { FerryError } from '../errors/error-codes.js';
import type { ReplayJobRunner } from '../replay/replay-job-runner.js';
import type { Catalog } from '../routing/catalog.js';
import type { ArchiveFilter, ReplayJobRecord, Store } from '../store/store.js';
import type { Clock } from '../util/clock.js';
import { objectBody, optionalTime, stringList } from './query-params.js';
import { toReplayJobView } from './replay-routes.js';
import { refuseUnknownKeys } from './unknown-keys.js';

/** What the archive replay routes need. */
export interface ArchiveReplayDeps {
  store: Store;
  catalog: Catalog;
  clock: Clock;
  jobs: ReplayJobRunner;
}

const bodyKeys = ['destinationId', 'sourceIds', 'since', 'until', 'dryRun', 'ratePerSecond'];
const dayMs = 86_400_000;
/** The longest backfill: ten years, well past any retention. */
const maxBackfillDays = 3650;

/**
 * Replay from the archive (`POST /replays`): the stored events of some sources in a
 * received-at range sent to one destination as a job, or counted by a dry run.
 */
export async function archiveReplayRoutes(app: FastifyInstance, deps: ArchiveReplayDeps): Promise<void> {
  const { store, catalog, clock } = deps;

  app.post('/replays', { config: { audit: { kind: 'replay-job', action: 'replay-job.create' } } }, async (request, reply) => {
    const body = objectBody(request.body ?? {});
    refuseUnknownKeys(body, bodyKeys, 'key');
    if (typeof body.destinationId !== 'string' || body.destinationId === '')
      throw new FerryError('bad_request', 'destinationId is required: the destination to send the events to', 'destinationId');
    const destination = catalog.destination(body.destinationId);
    if (!destination) throw new FerryError('not_found', `no destination ${body.destinationId}`, 'destinationId');
    const sourceIds = archiveSources(catalog, destination, stringList(body.sourceIds, 'sourceIds', false));
    const sinceMs = optionalTime(body.since, 'since');
    if (sinceMs === undefined) throw new FerryError('bad_request', 'since is required: events received at or after this time are sent', 'since');
    const nowMs = clock.now();
    const untilMs = Math.min(optionalTime(body.until, 'until') ?? nowMs + 1, nowMs + 1);
    if (untilMs <= sinceMs) throw new FerryError('bad_request', 'until must be after since, and since before now', 'until');
    if (body.dryRun !== undefined && typeof body.dryRun !== 'boolean') throw new FerryError('bad_request', 'dryRun must be true or false', 'dryRun');
    const ratePerSecond = optionalRate(body.ratePerSecond);
    const filter: ArchiveFilter = { destinationId: destination.id, sourceIds, sinceMs, untilMs, ...(ratePerSecond === undefined ? {} : { ratePerSecond }) };
    if (body.dryRun === true) {
      request.auditSkip = true;
      return { dryRun: true, wouldReplay: await store.countArchive(filter) };
    }
    refuseDisabled(catalog, destination);
    const job = await startArchiveReplay(deps, filter);
    return reply.code(202).send({ job: toReplayJobView(job) });
  });
}

/**
 * Stores and starts an archive replay job of `filter` (valid: its destination exists and is
 * enabled, its sources are routed to it), its total counted first.
 */
export async function startArchiveReplay(deps: Pick<ArchiveReplayDeps, 'store' | 'jobs'>, filter: ArchiveFilter): Promise<ReplayJobRecord> {
  return deps.jobs.submitArchive(filter, await deps.store.countArchive(filter));
}

/**
 * The `backfill` of a destination created through `POST /destinations`, `{ "days": N }`:
 * undefined when absent.
 */
export function backfillDays(raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new FerryError('bad_request', 'backfill must be an object: {"days": N}', 'backfill');
  refuseUnknownKeys(raw, ['days'], 'backfill key');
  const days = (raw as { days?: unknown }).days;
  if (typeof days !== 'number' || !Number.isInteger(days) || days < 1 || days > maxBackfillDays)
    throw new FerryError('bad_request', `backfill.days must be an integer from 1 to ${maxBackfillDays}`, 'backfill.days');
  return days;
}

/** The archive filter of a backfill of the last `days` days: every source of the destination, up to now. */
export function backfillFilter(destination: DestinationConfig, days: number, nowMs: number): ArchiveFilter {
  return { destinationId: destination.id, sourceIds: [...destination.sources], sinceMs: nowMs - days * dayMs, untilMs: nowMs + 1 };
}

/**
 * Refuses a replay to a disabled destination: it is sent nothing, so the job would send
 * nothing; an operator enables it first.
 */
export function refuseDisabled(catalog: Catalog, destination: DestinationConfig): void {
  if (!destination.enabled) throw new FerryError('destination_disabled', `destination ${destination.id} is disabled: enable it, then replay`, 'destinationId');
  if (catalog.types.get(destination.type) === undefined)
    throw new FerryError(
      'destination_disabled',
      `destination ${destination.id} is of type ${destination.type}, which this server does not know`,
      'destinationId',
    );
}

/** The sources asked for, each known and routed to the destination; by default every source the destination is routed from. */
function archiveSources(catalog: Catalog, destination: DestinationConfig, asked: string[] | undefined): string[] {
  if (asked === undefined) {
    if (destination.sources.length === 0) throw new FerryError('bad_request', `destination ${destination.id} is routed from no source`, 'sourceIds');
    return [...destination.sources];
  }
  for (const [i, id] of asked.entries()) {
    if (!catalog.source(id)) throw new FerryError('not_found', `no source ${id}`, `sourceIds[${i}]`);
    if (!destination.sources.includes(id))
      throw new FerryError(
        'bad_request',
        `destination ${destination.id} is not routed from source ${id}: only its sources' events are replayed`,
        `sourceIds[${i}]`,
      );
  }
  return [...new Set(asked)];
}

function optionalRate(raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw <= 0 || raw > 1_000_000)
    throw new FerryError('bad_request', 'ratePerSecond must be a number above 0 and at most 1000000', 'ratePerSecond');
  return raw;
}
