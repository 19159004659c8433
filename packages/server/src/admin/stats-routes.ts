import type { FastifyInstance } from 'fastify';
import { FerryError } from '../errors/error-codes.js';
import { attemptWindowsMs, type AttemptWindowName, type AttemptWindows, type AttemptWindowStats } from '../metrics/attempt-windows.js';
import type { DestinationConfig } from '../config/model.js';
import type { CircuitView } from '../delivery/circuit-breaker.js';
import { formatUtcMs } from '../model/timestamps.js';
import type { Catalog } from '../routing/catalog.js';
import type { BacklogReads } from '../store/backlog.js';
import type { DestinationHealthStore } from '../store/destination-health.js';
import type { Clock } from '../util/clock.js';

/** What the per-destination stats read. */
export interface StatsRouteDeps {
  store: Pick<BacklogReads, 'backlog'> & { health: Pick<DestinationHealthStore, 'list'> };
  clock: Clock;
  /** This server's recent attempts; absent when metrics are off, and the windows are then empty. */
  windows?: Pick<AttemptWindows, 'stats'>;
  /** This server's circuit breakers; absent: no circuit is shown. */
  circuits?: { view(destination: DestinationConfig): CircuitView[] };
}

/** One URL's circuit breaker on the node that answers. */
export interface CircuitStats {
  url: string;
  state: CircuitView['state'];
  since: string;
  consecutiveFailures: number;
  cooldownMs: number;
  probeAt: string | null;
  concurrencyLimit: number | null;
}

/** The answer of `GET /destinations/{id}/stats` (docs/admin-api.md). */
export interface DestinationStats {
  destinationId: string;
  pending: number;
  /** Pending jobs with at least one attempt in their current retry window. */
  retrying: number;
  dead: number;
  oldestPendingAgeSeconds: number | null;
  windows: Record<AttemptWindowName, AttemptWindowStats>;
  /** Each URL's circuit breaker on this node; empty when the breaker is off (or the type has no URLs). */
  circuits: CircuitStats[];
  /** The first failed attempt after its last success (ISO 8601, from the store: every node's); null while it succeeds. */
  failingSince: string | null;
  /** When Ferry disabled it for failing too long (`autoDisableAfterMs`); null unless it did and it is still disabled. */
  disabledAt: string | null;
  /** Why Ferry disabled it; null unless it did and it is still disabled. */
  disabledReason: string | null;
}

const noAttempts: AttemptWindowStats = { attempts: 0, succeeded: 0, successRate: null, p50Ms: null, p99Ms: null, filtered: 0 };

/**
 * A destination's stats without `retrying`, as `GET /destinations?include=stats` shows each
 * one: `retrying` reads the destination's pending rows, so a list of every destination would
 * read the whole backlog at every call.
 */
export type DestinationStatsSummary = Omit<DestinationStats, 'retrying'>;

/**
 * Builds destinations' stats: the backlog and the health records from the store (the truth on
 * a cluster), read once for however many destinations are asked for; the recent attempts and
 * circuits from this server's own windows and breakers (see docs/admin-api.md for why).
 */
export class DestinationStatsReader {
  constructor(private readonly deps: StatsRouteDeps) {}

  /** Each destination's stats but `retrying`, in the order given. */
  async summaries(destinations: readonly DestinationConfig[]): Promise<DestinationStatsSummary[]> {
    const [backlog, health] = await Promise.all([this.deps.store.backlog(), this.deps.store.health.list()]);
    const nowMs = this.deps.clock.now();
    const backlogOf = new Map(backlog.map((b) => [b.destinationId, b]));
    const healthOf = new Map(health.map((h) => [h.destinationId, h]));
    return destinations.map((destination) => {
      const id = destination.id;
      const own = backlogOf.get(id);
      const oldest = own?.oldestPendingCreatedAtMs ?? null;
      const windows = Object.fromEntries(
        (Object.keys(attemptWindowsMs) as AttemptWindowName[]).map((w) => [w, this.deps.windows?.stats(id, w, nowMs) ?? noAttempts]),
      ) as Record<AttemptWindowName, AttemptWindowStats>;
      const h = healthOf.get(id);
      return {
        destinationId: id,
        pending: own?.pending ?? 0,
        dead: own?.dead ?? 0,
        oldestPendingAgeSeconds: oldest === null ? null : Math.max(0, nowMs - oldest) / 1000,
        windows,
        circuits: (this.deps.circuits?.view(destination) ?? []).map((c) => ({
          url: c.url,
          state: c.state,
          since: formatUtcMs(c.sinceMs),
          consecutiveFailures: c.consecutiveFailures,
          cooldownMs: c.cooldownMs,
          probeAt: c.probeAtMs === null ? null : formatUtcMs(c.probeAtMs),
          concurrencyLimit: c.concurrencyLimit,
        })),
        failingSince: iso(h?.failingSinceMs),
        disabledAt: iso(h?.disabledAtMs),
        disabledReason: h?.disabledReason ?? null,
      };
    });
  }
}

/**
 * `GET /destinations/{id}/stats`: one destination's stats, `retrying` included. The list of
 * every destination with its stats is `GET /destinations?include=stats` (routes.ts), which
 * uses the same {@link DestinationStatsReader}.
 */
export async function statsRoutes(
  app: FastifyInstance,
  deps: { store: Pick<BacklogReads, 'retryingCount'>; catalog: Pick<Catalog, 'destination'>; reader: Pick<DestinationStatsReader, 'summaries'> },
): Promise<void> {
  app.get<{ Params: { id: string } }>('/destinations/:id/stats', async (request): Promise<DestinationStats> => {
    const { id } = request.params;
    const destination = deps.catalog.destination(id);
    if (!destination) throw new FerryError('not_found', `no destination ${id}`);
    const [[summary], retrying] = await Promise.all([deps.reader.summaries([destination]), deps.store.retryingCount(id)]);
    const { destinationId, pending, ...rest } = summary!;
    return { destinationId, pending, retrying, ...rest };
  });
}

function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}
