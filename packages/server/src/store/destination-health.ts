import type { DestinationConfig } from '../config/model.js';

/** What the store knows of a destination's recent fortune (docs/delivery.md, "Auto-disable"). */
export interface DestinationHealth {
  destinationId: string;
  /** The first failed attempt after its last success, as a node wrote it; null while it succeeds. */
  failingSinceMs: number | null;
  /** When Ferry disabled it for failing; null unless it did (an operator's disable leaves it null). */
  disabledAtMs: number | null;
  /** Why Ferry disabled it, for people; null unless it did. */
  disabledReason: string | null;
}

/** What {@link DestinationHealthStore.autoDisable} changed. */
export interface AutoDisabled {
  /** The destination as it was, enabled. */
  before: DestinationConfig;
  /** The destination as it is now, disabled. */
  after: DestinationConfig;
  failingSinceMs: number;
}

/**
 * Whether each destination's attempts fail, shared by every node of a cluster and kept over
 * restarts, and Ferry's own disabling of one that failed too long. Nodes write a change of
 * fortune (and refresh it now and then), never every attempt: see `delivery/auto-disable.ts`.
 * Every write of a destination's configuration that leaves it enabled (`saveDestination`)
 * forgets its record, so that a re-enabled or edited destination starts afresh.
 */
export interface DestinationHealthStore {
  /** A failed attempt at `nowMs`: failing since then, unless it already was. Resolves with the time it has been failing since. */
  recordFailure(destinationId: string, nowMs: number): Promise<number>;
  /** A successful attempt: no longer failing. */
  recordSuccess(destinationId: string): Promise<void>;
  /**
   * In one transaction: when the destination is enabled and has been failing since
   * `failingSinceAtOrBeforeMs` or earlier, sets `enabled: false` in its configuration and
   * records when and why; otherwise changes nothing and resolves with undefined (another node
   * did it first, a success came in between, an operator re-enabled it).
   */
  autoDisable(args: { destinationId: string; failingSinceAtOrBeforeMs: number; nowMs: number; reason: string }): Promise<AutoDisabled | undefined>;
  /** The record of a destination; undefined when there is none (never failed, or started afresh). */
  get(destinationId: string): Promise<DestinationHealth | undefined>;
  /** Every record, in one read (a row per destination that failed since it was last saved). */
  list(): Promise<DestinationHealth[]>;
}

/** A row of `destination_health`, as both dialects name its columns. */
export interface DestinationHealthRow {
  destination_id: string;
  failing_since: number | string | null;
  disabled_at: number | string | null;
  disabled_reason: string | null;
}

/** A row as the store's callers see it (PostgreSQL hands BIGINTs over as strings). */
export function toDestinationHealth(row: DestinationHealthRow): DestinationHealth {
  const ms = (v: number | string | null) => (v === null ? null : Number(v));
  return { destinationId: row.destination_id, failingSinceMs: ms(row.failing_since), disabledAtMs: ms(row.disabled_at), disabledReason: row.disabled_reason };
}
