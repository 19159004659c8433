import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { defaultAutoDisableAfterMs } from '../config/defaults.js';
import { destinationRedactor } from '../config/redact.js';
import type { Catalog } from '../routing/catalog.js';
import type { Store } from '../store/store.js';
import type { Clock } from '../util/clock.js';
import { RepeatedErrorLog } from '../util/repeated-error-log.js';
import type { DeliveryEvents } from './worker.js';

/**
 * How often a node writes again a fortune it wrote already (failing, or succeeding): another
 * node may have written the other one meanwhile. So a success counts in the store at most this
 * late, and a destination is disabled only after at least `autoDisableAfterMs` minus this
 * without a success anywhere (which is why `autoDisableAfterMs` is at least 5 minutes).
 */
export const healthRefreshMs = 60_000;

/** The token id of the audit log's entries that Ferry writes itself. */
export const systemTokenId = 'system';

/** A destination Ferry disabled for failing too long. */
export interface AutoDisabledNotice {
  destinationId: string;
  failingSinceMs: number;
  disabledAtMs: number;
  autoDisableAfterMs: number;
  reason: string;
}

/** What {@link AutoDisable} needs. */
export interface AutoDisableOptions {
  /** Whose outcomes it follows: the delivery worker. */
  worker: Pick<EventEmitter<DeliveryEvents>, 'on' | 'off'>;
  store: Pick<Store, 'health' | 'audit'>;
  catalog: Pick<Catalog, 'destination' | 'reload' | 'types'>;
  clock: Clock;
  logger: Logger;
  /** After a destination was disabled, audited and the catalogue reloaded (metrics, the bus). */
  onDisabled?(notice: AutoDisabledNotice): void;
}

/** What this node last wrote of a destination's fortune. */
interface Written {
  failing: boolean;
  atMs: number;
  /** While failing: since when, as the store answered (every node's failures count). */
  failingSinceMs?: number;
  /** A disable is on its way. */
  disabling?: boolean;
}

/**
 * Disables a destination that has been failing without a single success for its
 * `autoDisableAfterMs` (default 3 days; 0 never), and says so: a `warn` line, an audit log
 * entry by `system`, an event (metrics count it), and the time and reason in the
 * destination's record, which its stats show (docs/delivery.md, "Auto-disable").
 *
 * It follows the worker's outcomes and writes to the store only when a destination's fortune
 * changes here (the first failure after a success, the first success after a failure), and
 * again at most every {@link healthRefreshMs} while it stays, never per attempt. The time a
 * destination has been failing since is the store's, shared by every node and kept over
 * restarts; the disable itself is one conditional transaction, so that of several nodes one
 * does it, and none does after a success or a re-enable came in between. It happens at a
 * failed attempt: a destination nothing is attempted for is left as it is.
 */
export class AutoDisable {
  private readonly written = new Map<string, Written>();
  /** Per destination, the store writes in order: a success never overtakes the failure before it. */
  private readonly chains = new Map<string, Promise<void>>();
  private readonly running = new Set<Promise<void>>();
  private readonly errors: RepeatedErrorLog;
  private readonly redact: ReturnType<typeof destinationRedactor>;
  private readonly onSuccess = ({ destinationId }: { destinationId: string }) => this.succeeded(destinationId);
  private readonly onFailure = ({ destinationId }: { destinationId: string }) => this.failed(destinationId);

  constructor(private readonly o: AutoDisableOptions) {
    this.redact = destinationRedactor(o.catalog.types);
    this.errors = new RepeatedErrorLog({
      logger: o.logger,
      clock: o.clock,
      intervalMs: healthRefreshMs,
      message: "could not record a destination's failures or successes; auto-disable waits for the store",
      recoveredMessage: "destinations' failures and successes are recorded again",
    });
  }

  /** Follows the worker's outcomes until {@link stop}. */
  start(): void {
    this.o.worker.on('delivery:succeeded', this.onSuccess);
    this.o.worker.on('delivery:retrying', this.onFailure);
    this.o.worker.on('delivery:dead', this.onFailure);
  }

  /** Stops following; writes on their way go on (see {@link settled}). */
  stop(): void {
    this.o.worker.off('delivery:succeeded', this.onSuccess);
    this.o.worker.off('delivery:retrying', this.onFailure);
    this.o.worker.off('delivery:dead', this.onFailure);
  }

  /** Resolves once every write on its way (a disable included) is done. */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private succeeded(destinationId: string): void {
    const nowMs = this.o.clock.now();
    const last = this.written.get(destinationId);
    if (last !== undefined && !last.failing && nowMs - last.atMs < healthRefreshMs) return;
    this.written.set(destinationId, { failing: false, atMs: nowMs });
    this.then(destinationId, () => this.o.store.health.recordSuccess(destinationId));
  }

  private failed(destinationId: string): void {
    const nowMs = this.o.clock.now();
    const last = this.written.get(destinationId);
    if (last !== undefined && last.failing && nowMs - last.atMs < healthRefreshMs) {
      this.check(destinationId, last, nowMs);
      return;
    }
    const now: Written = { failing: true, atMs: nowMs, failingSinceMs: last?.failing ? last.failingSinceMs : undefined };
    this.written.set(destinationId, now);
    this.then(destinationId, async () => {
      now.failingSinceMs = await this.o.store.health.recordFailure(destinationId, nowMs);
      this.check(destinationId, now, nowMs);
    });
  }

  /** At a failure: disables the destination if, as far as this node knows, it has failed long enough. */
  private check(destinationId: string, written: Written, nowMs: number): void {
    const destination = this.o.catalog.destination(destinationId);
    if (!destination?.enabled || written.disabling || written.failingSinceMs === undefined) return;
    const afterMs = destination.autoDisableAfterMs ?? defaultAutoDisableAfterMs;
    if (afterMs === 0 || nowMs - written.failingSinceMs < afterMs) return;
    written.disabling = true;
    this.then(destinationId, () => this.disable(destinationId, afterMs, nowMs));
  }

  private async disable(destinationId: string, autoDisableAfterMs: number, nowMs: number): Promise<void> {
    const reason = `failing without a single success for longer than its autoDisableAfterMs (${autoDisableAfterMs} ms)`;
    const done = await this.o.store.health.autoDisable({ destinationId, failingSinceAtOrBeforeMs: nowMs - autoDisableAfterMs, nowMs, reason });
    // Done or not (a success or a re-enable came in between, another node did it), what this
    // node knew is stale: the next outcome writes afresh.
    this.written.delete(destinationId);
    if (done === undefined) return;
    const notice: AutoDisabledNotice = { destinationId, failingSinceMs: done.failingSinceMs, disabledAtMs: nowMs, autoDisableAfterMs, reason };
    this.o.logger.warn(
      { destinationId, failingSince: new Date(done.failingSinceMs).toISOString(), autoDisableAfterMs },
      'destination disabled: it has been failing without a single success for longer than autoDisableAfterMs; re-enable it with PATCH {"enabled": true}',
    );
    try {
      await this.o.store.audit.append({
        atMs: nowMs,
        tokenId: systemTokenId,
        method: 'SYSTEM',
        path: `/admin/v1/destinations/${destinationId}`,
        action: 'destination.auto-disable',
        object: { kind: 'destination', id: destinationId },
        status: 200,
        error: null,
        before: this.redact(done.before),
        after: this.redact(done.after),
      });
    } catch (error) {
      this.o.logger.error({ err: error, destinationId }, 'the auto-disable of a destination could not be written to the audit log');
    }
    try {
      await this.o.catalog.reload();
    } catch (error) {
      // Disabled in the store all the same: the next reload (another change, a refresh, a restart) stops its sends.
      this.o.logger.warn({ err: error, destinationId }, 'could not reload the destinations after an auto-disable; its sends stop at the next reload');
    }
    this.o.onDisabled?.(notice);
  }

  /** Runs `work` after the writes of the destination before it; a failure is logged, and what this node knew forgotten. */
  private then(destinationId: string, work: () => Promise<void>): void {
    const next = (this.chains.get(destinationId) ?? Promise.resolve()).then(work).then(
      () => this.errors.resolved(),
      (error: unknown) => {
        this.written.delete(destinationId);
        this.errors.report(error, { destinationId });
      },
    );
    this.chains.set(destinationId, next);
    this.running.add(next);
    void next.finally(() => {
      this.running.delete(next);
      if (this.chains.get(destinationId) === next) this.chains.delete(destinationId);
    });
  }
}
