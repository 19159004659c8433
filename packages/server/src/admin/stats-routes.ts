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
  store: BacklogReads & { health: Pick<DestinationHealthStore, 'get'> };
  catalog: Pick<Catalog, 'destination'>;
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
 * `GET /destinations/{id}/stats`: the backlog from the store (the truth on a cluster), the
 * recent attempts from this server's own windows (see docs/admin-api.md for why).
 */
export async function statsRoutes(app: FastifyInstance, deps: StatsRouteDeps): Promise<void> {
  app.get<{ Params: { id: string } }>('/destinations/:id/stats', async (request): Promise<DestinationStats> => {
    const { id } = request.params;
    const destination = deps.catalog.destination(id);
    if (!destination) throw new FerryError('not_found', `no destination ${id}`);
    const [backlog, retrying, health] = await Promise.all([deps.store.backlog(), deps.store.retryingCount(id), deps.store.health.get(id)]);
    const nowMs = deps.clock.now();
    const own = backlog.find((b) => b.destinationId === id);
    const oldest = own?.oldestPendingCreatedAtMs ?? null;
    const windows = Object.fromEntries(
      (Object.keys(attemptWindowsMs) as AttemptWindowName[]).map((w) => [w, deps.windows?.stats(id, w, nowMs) ?? noAttempts]),
    ) as Record<AttemptWindowName, AttemptWindowStats>;
    return {
      destinationId: id,
      pending: own?.pending ?? 0,
      retrying,
      dead: own?.dead ?? 0,
      oldestPendingAgeSeconds: oldest === null ? null : Math.max(0, nowMs - oldest) / 1000,
      windows,
      circuits: (deps.circuits?.view(destination) ?? []).map((c) => ({
        url: c.url,
        state: c.state,
        since: formatUtcMs(c.sinceMs),
        consecutiveFailures: c.consecutiveFailures,
        cooldownMs: c.cooldownMs,
        probeAt: c.probeAtMs === null ? null : formatUtcMs(c.probeAtMs),
        concurrencyLimit: c.concurrencyLimit,
      })),
      failingSince: iso(health?.failingSinceMs),
      disabledAt: iso(health?.disabledAtMs),
      disabledReason: health?.disabledReason ?? null,
    };
  });
}

function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}
