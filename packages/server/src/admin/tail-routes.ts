import type { FastifyInstance } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import type { FerryEventName, FerryEvents } from '../events/catalogue.js';
import type { EventBus } from '../events/event-bus.js';
import { formatUtcMs } from '../model/timestamps.js';
import type { Clock } from '../util/clock.js';
import { defaultTailMaxClients, EventStreams } from './event-streams.js';

export { defaultTailMaxClients, tailHeartbeatMs } from './event-streams.js';

/** What `GET /tail` needs. */
export interface TailDeps {
  events: EventBus;
  /** Stamps each event (`at`) and runs the heartbeat timer. */
  clock: Clock;
  /**
   * The streams of the admin API, sharing their cap; when absent, a set of its own of
   * {@link defaultTailMaxClients}.
   */
  streams?: EventStreams;
}

type Summary = Record<string, unknown>;

/**
 * What each event shows on the stream: ids, counts, outcomes, status codes and latencies,
 * never a write key, a secret, a body or an error object (whose message may name hosts or
 * files). A URL is shown as the admin API's attempt log shows it (query values redacted);
 * `lastError` as a delivery's `lastError` is. Events left out (`worker:error`,
 * `lifecycle:stopped`) carry nothing safe, or come once no stream is left.
 */
const tailable = {
  'ingest:accepted': (p) => ({ sourceId: p.sourceId, count: p.count, duplicates: p.duplicates }),
  'ingest:rejected': (p) => ({ sourceId: p.sourceId, rejected: p.rejected.length, codes: countCodes(p.rejected.map((r) => r.code)) }),
  'ingest:refused': (p) => ({ code: p.code, status: p.status, sourceId: p.sourceId ?? null }),
  'ingest:filtered': (p) => ({ sourceId: p.sourceId, filtered: Object.fromEntries(p.filtered.map((f) => [f.destinationId, f.count])) }),
  'delivery:attempted': (p) => ({
    id: p.id,
    destinationId: p.destinationId,
    url: p.url,
    statusCode: p.statusCode,
    errorClass: p.errorClass,
    latencyMs: p.latencyMs,
    outcome: p.outcome,
  }),
  'delivery:succeeded': (p) => ({ id: p.id, destinationId: p.destinationId, attempts: p.attempts }),
  'delivery:retrying': (p) => ({ id: p.id, destinationId: p.destinationId, nextAttemptAt: formatUtcMs(p.nextAttemptAtMs), lastError: p.lastError }),
  'delivery:dead': (p) => ({ id: p.id, destinationId: p.destinationId, reason: p.reason, lastError: p.lastError }),
  'delivery:lease-lost': (p) => ({ id: p.id }),
  'regulation:done': (p) => ({
    regulationId: p.regulationId,
    eventsDeleted: p.eventsDeleted,
    deliveriesDeleted: p.deliveriesDeleted,
    notices: p.notices,
  }),
  'audience:synced': (p) => ({ ...p }),
  'store:unavailable': () => ({}),
  'store:ready': () => ({}),
  'lifecycle:draining': (p) => ({ drainMs: p.drainMs }),
  'breaker:opened': (p) => ({
    destinationId: p.destinationId,
    url: p.url,
    reason: p.reason,
    failures: p.failures,
    cooldownMs: p.cooldownMs,
    probeAt: formatUtcMs(p.probeAtMs),
  }),
  'breaker:half-open': (p) => ({ destinationId: p.destinationId, url: p.url }),
  'breaker:closed': (p) => ({ destinationId: p.destinationId, url: p.url, reason: p.reason, openForMs: p.openForMs }),
} satisfies { [K in FerryEventName]?: (payload: FerryEvents[K]) => Summary };

/** The name of an event `GET /tail` streams. */
export type TailEventName = keyof typeof tailable;

/** Every event `GET /tail` can stream, in the catalogue's order; the default of `?events=`. */
export const tailEventNames = Object.keys(tailable) as TailEventName[];

function countCodes(codes: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const code of codes) counts[code] = (counts[code] ?? 0) + 1;
  return counts;
}

function chosenEvents(raw: unknown): TailEventName[] {
  if (raw === undefined) return tailEventNames;
  const names = typeof raw === 'string' ? raw.split(',').map((name) => name.trim()) : [];
  const unknown = names.filter((name) => !(tailEventNames as string[]).includes(name));
  if (names.length === 0 || unknown.length > 0 || names.every((name) => name === ''))
    throw new FerryError(
      'bad_request',
      `events must be a comma-separated list of ${tailEventNames.join(', ')}${unknown.length > 0 ? ` (got ${unknown.map((u) => JSON.stringify(u)).join(', ')})` : ''}`,
      'events',
    );
  return [...new Set(names as TailEventName[])];
}

/**
 * `GET /tail`: what happens in the server as it happens, as server-sent events, one per event
 * of the catalogue: `event: <name>` and `data: {"at": ISO time, ...summary}` (see
 * {@link tailable} for what each shows). `?events=a,b` chooses (default: all). A comment line
 * (`: heartbeat`) comes every {@link tailHeartbeatMs} on the clock's timers. A stream's
 * listeners leave the bus when its client goes away. When the server stops, every stream
 * ends (before the listener closes, so that none holds the stop), and each client learns of
 * the stop by `lifecycle:draining` if it chose it.
 */
export async function tailRoutes(app: FastifyInstance, deps: TailDeps): Promise<void> {
  const { events, clock } = deps;
  const streams = deps.streams ?? new EventStreams(clock, defaultTailMaxClients);
  if (!deps.streams) streams.endOnClose(app);

  app.get<{ Querystring: { events?: string } }>('/tail', { config: { query: ['events'] } }, async (request, reply) => {
    const names = chosenEvents(request.query.events);
    return streams.send(reply, `ferry tail: ${names.join(',')}`, (write) => {
      const listeners = names.map((name) => {
        const summarise = tailable[name] as (payload: unknown) => Summary;
        const listener = (payload: unknown) => write(`event: ${name}\ndata: ${JSON.stringify({ at: formatUtcMs(clock.now()), ...summarise(payload) })}\n\n`);
        events.on(name, listener);
        return { name, listener };
      });
      return () => {
        for (const { name, listener } of listeners) events.off(name, listener);
      };
    });
  });
}
