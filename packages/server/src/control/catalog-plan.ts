/**
 * The plan of a configuration: what applying it to a store's catalogue would change, object by
 * object and field by field, secrets masked. Pure: it reads nothing and writes nothing, so
 * `ferry config plan`, the admin API and a start all show the same plan they would apply.
 */
import { destinationRedactor, redactSource } from '../config/redact.js';
import type { DestinationConfig, SourceConfig } from '../config/model.js';
import type { DestinationRegistry } from '../destinations/registry.js';
import { FerryError } from '../errors/error-codes.js';
import type { StoredCatalog } from '../store/catalog-store.js';
import type { AppliedConfig } from './applied-config.js';
import { objectDigest, type DesiredCatalog } from './config-hash.js';
import { diffFields, type FieldChange } from './field-diff.js';

/**
 * What applying does to one object:
 * - `create`: the configuration names it, the store has none;
 * - `update`: the store's differs (in `fields`);
 * - `unchanged`: the store's is the same;
 * - `kept`: the last configuration applied named it, this one does not, and the store still
 *   has it. It is left as it is: a configuration never deletes (delete through the admin API).
 */
export type ChangeAction = 'create' | 'update' | 'unchanged' | 'kept';

/** One object of a plan. */
export interface CatalogChange {
  action: ChangeAction;
  kind: 'source' | 'destination';
  id: string;
  /** The fields set (`create`) or changed (`update`), masked; empty otherwise. */
  fields: FieldChange[];
  /**
   * Set on an `update` of an object edited since the last configuration was applied (through
   * the admin API, or another tool): applying overrides that edit.
   */
  overridesEdit?: true;
}

/** What a plan needs besides the two catalogues. */
export interface PlanOptions {
  /** The destination types, whose redaction masks their settings. */
  types: DestinationRegistry;
  /** The last configuration applied to the store, if any: for `kept` and `overridesEdit`. */
  applied?: AppliedConfig | undefined;
}

/**
 * The changes that applying `desired` to `stored` makes: its sources, then its destinations,
 * each in the configuration's order, then the objects `kept`. Objects neither configuration
 * named (created through the admin API) are not listed: applying leaves them alone.
 *
 * @throws FerryError `conflict` when a source of `desired` takes the write key of a stored
 *   source it does not name: its events would be credited to the other one.
 * @example
 * planCatalog(await store.loadCatalog(), { sources: config.sources, destinations: config.destinations }, { types });
 * // [{ action: 'update', kind: 'destination', id: 'crm', fields: [{ path: 'enabled', old: false, new: true }] }, ...]
 */
export function planCatalog(stored: StoredCatalog, desired: DesiredCatalog, options: PlanOptions): CatalogChange[] {
  checkWriteKeys(stored, desired);
  const redactDestination = destinationRedactor(options.types);
  const changes: CatalogChange[] = [];
  const storedSources = new Map(stored.sources.map((s) => [s.id, s]));
  for (const source of desired.sources) {
    changes.push(change('source', source, storedSources.get(source.id), redactSource, options.applied?.sources[source.id]));
  }
  const storedDestinations = new Map(stored.destinations.map((d) => [d.id, d]));
  for (const destination of desired.destinations) {
    changes.push(change('destination', destination, storedDestinations.get(destination.id), redactDestination, options.applied?.destinations[destination.id]));
  }
  if (options.applied) {
    const named = { source: new Set(desired.sources.map((s) => s.id)), destination: new Set(desired.destinations.map((d) => d.id)) };
    for (const id of Object.keys(options.applied.sources))
      if (!named.source.has(id) && storedSources.has(id)) changes.push({ action: 'kept', kind: 'source', id, fields: [] });
    for (const id of Object.keys(options.applied.destinations))
      if (!named.destination.has(id) && storedDestinations.has(id)) changes.push({ action: 'kept', kind: 'destination', id, fields: [] });
  }
  return changes;
}

function change<T extends SourceConfig | DestinationConfig>(
  kind: CatalogChange['kind'],
  next: T,
  current: T | undefined,
  redact: (object: T) => unknown,
  appliedDigest: string | undefined,
): CatalogChange {
  if (current === undefined) return { action: 'create', kind, id: next.id, fields: diffFields(undefined, next, undefined, redact(next)) };
  const fields = diffFields(current, next, redact(current), redact(next));
  if (fields.length === 0) return { action: 'unchanged', kind, id: next.id, fields };
  const out: CatalogChange = { action: 'update', kind, id: next.id, fields };
  if (appliedDigest !== undefined && appliedDigest !== objectDigest(current)) out.overridesEdit = true;
  return out;
}

/** A write key names one source: one the configuration does not name may not share it with one it does. */
function checkWriteKeys(stored: StoredCatalog, desired: DesiredCatalog): void {
  const named = new Set(desired.sources.map((s) => s.id));
  desired.sources.forEach((source, i) => {
    const clash = stored.sources.find((other) => other.writeKey === source.writeKey && !named.has(other.id));
    if (clash)
      throw new FerryError(
        'conflict',
        `source ${source.id} uses the write key of source ${clash.id}, which is in the store but not in the configuration; give one of them another key`,
        `sources[${i}].writeKey`,
      );
  });
}

/** How many objects a plan creates, updates, leaves unchanged and keeps. */
export function summarizePlan(changes: readonly CatalogChange[]): Record<ChangeAction, number> {
  const counts: Record<ChangeAction, number> = { create: 0, update: 0, unchanged: 0, kept: 0 };
  for (const c of changes) counts[c.action] += 1;
  return counts;
}
