import { EventEmitter } from 'node:events';
import type { DestinationConfig, SourceConfig } from '../config/model.js';
import { builtInDestinationTypes, type DestinationRegistry } from '../destinations/registry.js';
import { FerryError } from '../errors/error-codes.js';
import type { Store } from '../store/store.js';
import type { Logger } from 'pino';
import { timersOf, type Clock, type TimerHandle } from '../util/clock.js';
import { routeTargetOf, type RouteTarget } from './route-target.js';

/**
 * Sources and destinations as the running server sees them: loaded from the store, where the
 * configuration is applied (`control/catalog-apply.ts`) and the admin API's edits are
 * persisted. Reads are in memory because every ingestion request needs them.
 */
export class Catalog extends EventEmitter<{ 'catalog:reloaded': [] }> {
  private sourcesById = new Map<string, SourceConfig>();
  private sourcesByKey = new Map<string, SourceConfig>();
  private destinationsById = new Map<string, DestinationConfig>();
  /** Enabled destinations in id order, rebuilt on every change (the delivery worker asks per job). */
  private enabled: readonly DestinationConfig[] = [];
  /** Enabled destinations per source id, rebuilt on every change. */
  private enabledBySource = new Map<string, DestinationConfig[]>();
  /** The same as route targets (filters and removals compiled), rebuilt on every change. */
  private routes = new Map<string, RouteTarget[]>();
  /** The next {@link refreshEvery} reload, while refreshing. */
  private refreshTimer: TimerHandle | undefined;
  private refreshing = false;

  /**
   * @param types The destination types this server knows; a stored destination of another
   *   type (one no longer registered) is neither routed to nor delivered.
   */
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    readonly types: DestinationRegistry = builtInDestinationTypes,
  ) {
    super();
  }

  /** Re-reads the store; other nodes' admin edits become visible this way. */
  async reload(): Promise<void> {
    const { sources, destinations } = await this.store.loadCatalog();
    this.sourcesById = new Map(sources.map((s) => [s.id, s]));
    this.sourcesByKey = new Map(sources.map((s) => [s.writeKey, s]));
    this.destinationsById = new Map(destinations.map((d) => [d.id, d]));
    const active = destinations.filter((d) => d.enabled && this.types.get(d.type) !== undefined);
    this.enabled = Object.freeze(active);
    this.enabledBySource = new Map(sources.map((s) => [s.id, active.filter((d) => d.sources.includes(s.id))]));
    // Compiled once per destination, however many sources it is connected to.
    const targets = new Map(active.map((d) => [d.id, routeTargetOf(d)]));
    this.routes = new Map([...this.enabledBySource].map(([id, list]) => [id, list.map((d) => targets.get(d.id)!)]));
    this.emit('catalog:reloaded');
  }

  /**
   * Reloads every `intervalMs` on the clock's timers, so that admin edits made on another node
   * take effect here; a failed reload keeps the last catalogue and is logged. Until
   * {@link stopRefreshing}.
   */
  refreshEvery(intervalMs: number, logger: Logger): void {
    this.refreshing = true;
    const timers = timersOf(this.clock);
    const next = (): void => {
      if (!this.refreshing) return;
      this.refreshTimer = timers.setTimeout(() => {
        this.reload()
          .catch((err: unknown) => logger.warn({ err }, 'could not reload sources and destinations; keeping the last ones'))
          .finally(next);
      }, intervalMs);
    };
    next();
  }

  /** Stops {@link refreshEvery}. */
  stopRefreshing(): void {
    this.refreshing = false;
    timersOf(this.clock).clearTimeout(this.refreshTimer);
    this.refreshTimer = undefined;
  }

  /** The source a write key belongs to (ingestion's authentication), if any. */
  sourceByWriteKey(writeKey: string): SourceConfig | undefined {
    return this.sourcesByKey.get(writeKey);
  }

  /** A source by id, as last read from the store. */
  source(id: string): SourceConfig | undefined {
    return this.sourcesById.get(id);
  }

  /** Every source, in id order; a copy the caller may keep. */
  sources(): SourceConfig[] {
    return [...this.sourcesById.values()];
  }

  /** A destination by id, enabled or not. */
  destination(id: string): DestinationConfig | undefined {
    return this.destinationsById.get(id);
  }

  /** Every destination, enabled or not, in id order; a copy the caller may keep. */
  destinations(): DestinationConfig[] {
    return [...this.destinationsById.values()];
  }

  /** Every enabled destination of a known type, in id order; the same array until the next change. */
  enabledDestinations(): readonly DestinationConfig[] {
    return this.enabled;
  }

  /** Enabled destinations of a known type connected to a source. */
  enabledDestinationsOf(sourceId: string): readonly DestinationConfig[] {
    return this.enabledBySource.get(sourceId) ?? [];
  }

  /** What ingestion routes a source's calls to: its enabled destinations, filters and removals compiled. */
  routesOf(sourceId: string): readonly RouteTarget[] {
    return this.routes.get(sourceId) ?? [];
  }

  /**
   * Creates or replaces a source and reloads.
   *
   * @throws FerryError `conflict` when another source already uses its write key.
   */
  async putSource(source: SourceConfig): Promise<void> {
    const clash = this.sourcesByKey.get(source.writeKey);
    if (clash && clash.id !== source.id) throw new FerryError('conflict', `another source already uses this write key`, 'writeKey');
    await this.store.saveSource(source);
    await this.reload();
  }

  /**
   * Deletes a source; false if there was none.
   *
   * @throws FerryError `conflict` while destinations are still connected to it.
   */
  async removeSource(id: string): Promise<boolean> {
    if (!this.sourcesById.has(id)) return false;
    const users = this.destinations().filter((d) => d.sources.includes(id));
    if (users.length > 0)
      throw new FerryError('conflict', `source ${id} is connected to destination(s) ${users.map((d) => d.id).join(', ')}; disconnect them first`);
    await this.store.deleteSource(id);
    await this.reload();
    return true;
  }

  /** Creates or replaces a destination and reloads; it gets only calls ingested from now on. */
  async putDestination(destination: DestinationConfig): Promise<void> {
    await this.store.saveDestination(destination);
    await this.reload();
  }

  /**
   * Replaces a destination only if the store still holds `previous`, then reloads; false when
   * it changed meanwhile (another request or node got there first). See
   * `CatalogStore.replaceDestination`.
   */
  async replaceDestination(next: DestinationConfig, previous: DestinationConfig): Promise<boolean> {
    const replaced = await this.store.replaceDestination(next, previous);
    await this.reload();
    return replaced;
  }

  /** Deletes a destination; its pending jobs are dead-lettered (replayable if it comes back). */
  async removeDestination(id: string): Promise<boolean> {
    if (!this.destinationsById.has(id)) return false;
    await this.store.deleteDestination(id);
    await this.store.abandonPending(id, this.clock.now());
    await this.reload();
    return true;
  }
}
