/**
 * Applying a configuration to a store: its plan carried out (sources first, so a destination
 * never names a source the store lacks), every change logged at `warn` with its fields masked,
 * and the configuration recorded as the last one applied. At start, {@link applyIfChanged}
 * does this only when the configuration differs from the last one applied, so edits made
 * through the admin API survive restarts with the same file.
 */
import type { Logger } from 'pino';
import type { DestinationRegistry } from '../destinations/registry.js';
import type { CatalogStore } from '../store/catalog-store.js';
import type { Clock } from '../util/clock.js';
import { appliedConfigOf, readAppliedConfig, writeAppliedConfig } from './applied-config.js';
import { catalogHash, type DesiredCatalog } from './config-hash.js';
import { planCatalog, summarizePlan, type CatalogChange } from './catalog-plan.js';

/** What applying needs. */
export interface ApplyOptions {
  types: DestinationRegistry;
  logger: Logger;
  clock: Clock;
  /** Names what applies, in log lines: `the configuration file`, `ferry config apply`. */
  origin: string;
}

/**
 * Applies `desired` to the store whatever was applied before, and records it as the last
 * configuration applied. The caller reloads its catalogue.
 *
 * @returns The plan carried out (every object of `desired`, and those kept).
 * @throws FerryError `conflict` as {@link planCatalog} does, before anything is written.
 */
export async function applyCatalog(store: CatalogStore, desired: DesiredCatalog, options: ApplyOptions): Promise<CatalogChange[]> {
  return store.withCatalogLock(() => applyLocked(store, desired, options));
}

async function applyLocked(store: CatalogStore, desired: DesiredCatalog, options: ApplyOptions): Promise<CatalogChange[]> {
  const [stored, applied] = await Promise.all([store.loadCatalog(), readAppliedConfig(store)]);
  const changes = planCatalog(stored, desired, { types: options.types, applied });
  const sources = new Map(desired.sources.map((s) => [s.id, s]));
  const destinations = new Map(desired.destinations.map((d) => [d.id, d]));
  for (const c of changes) {
    if (c.action !== 'create' && c.action !== 'update') continue;
    if (c.kind === 'source') await store.saveSource(sources.get(c.id)!);
  }
  for (const c of changes) {
    if (c.action !== 'create' && c.action !== 'update') continue;
    if (c.kind === 'destination') await store.saveDestination(destinations.get(c.id)!);
  }
  await writeAppliedConfig(store, appliedConfigOf(desired, options.clock.now()));
  // Into an empty store, creating is all a file can do and overrides nothing: said at info.
  const firstFill = applied === undefined && stored.sources.length === 0 && stored.destinations.length === 0;
  logChanges(changes, options, firstFill);
  return changes;
}

/**
 * Applies `desired` only when it differs from the last configuration applied to the store
 * (by {@link catalogHash}); otherwise changes nothing and logs at `info` that the store's
 * catalogue stands.
 *
 * @returns Whether it was applied, and the plan carried out (empty when not).
 */
export async function applyIfChanged(
  store: CatalogStore,
  desired: DesiredCatalog,
  options: ApplyOptions,
): Promise<{ applied: boolean; changes: CatalogChange[] }> {
  // Under the lock: a node that started beside this one with the same file applied it first.
  return store.withCatalogLock(async () => {
    const last = await readAppliedConfig(store);
    if (last?.sha256 === catalogHash(desired)) {
      options.logger.info(
        { appliedAt: last.appliedAt },
        `${options.origin} is the one last applied; the store's sources and destinations stand as they are (admin API edits included)`,
      );
      return { applied: false, changes: [] };
    }
    return { applied: true, changes: await applyLocked(store, desired, options) };
  });
}

function logChanges(changes: readonly CatalogChange[], { logger, origin }: ApplyOptions, firstFill = false): void {
  for (const c of changes) {
    const object = `${c.kind} ${c.id}`;
    if (c.action === 'create')
      logger[firstFill ? 'info' : 'warn']({ kind: c.kind, id: c.id, action: c.action, fields: c.fields }, `${origin} created ${object}`);
    else if (c.action === 'kept')
      logger.warn(
        { kind: c.kind, id: c.id, action: c.action },
        `${object} is no longer in ${origin}; it is kept in the store as it is (delete it through the admin API to remove it)`,
      );
    else if (c.action === 'update') {
      const overrides = c.overridesEdit ? ', overriding an edit made since the last configuration was applied' : '';
      for (const field of c.fields) {
        logger.warn(
          { kind: c.kind, id: c.id, action: c.action, field: field.path, old: field.old, new: field.new, overridesEdit: c.overridesEdit ?? false },
          `${origin} changed ${object}: ${field.path}${overrides}`,
        );
      }
    }
  }
  const counts = summarizePlan(changes);
  logger.info(counts, `${origin} applied: ${counts.create} created, ${counts.update} updated, ${counts.unchanged} unchanged, ${counts.kept} kept`);
}
