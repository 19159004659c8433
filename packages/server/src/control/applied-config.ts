/**
 * What the store remembers of the last configuration applied to it (a setting of its own):
 * the configuration's hash, so a start with the same configuration changes nothing, and a
 * digest of each object as that configuration set it, so an edit made since (through the
 * admin API) is recognised when a new configuration overrides it, and an object the new
 * configuration no longer names is reported as kept.
 */
import type { CatalogStore } from '../store/catalog-store.js';
import { catalogHash, objectDigest, type DesiredCatalog } from './config-hash.js';

/** The store setting that holds the record. */
export const appliedConfigSetting = 'config_applied';

/** The last configuration applied to a store. */
export interface AppliedConfig {
  /** {@link catalogHash} of the configuration. */
  sha256: string;
  /** When it was applied, ISO 8601. */
  appliedAt: string;
  /** {@link objectDigest} of each source it named, by id. */
  sources: Record<string, string>;
  /** {@link objectDigest} of each destination it named, by id. */
  destinations: Record<string, string>;
}

/** The record of `desired`, applied at `atMs`. */
export function appliedConfigOf(desired: DesiredCatalog, atMs: number): AppliedConfig {
  return {
    sha256: catalogHash(desired),
    appliedAt: new Date(atMs).toISOString(),
    sources: Object.fromEntries(desired.sources.map((s) => [s.id, objectDigest(s)])),
    destinations: Object.fromEntries(desired.destinations.map((d) => [d.id, objectDigest(d)])),
  };
}

/**
 * The record the store holds, or undefined when none was ever written (a store older than
 * the record, or one no configuration was applied to). A record that cannot be read counts
 * as none: the configuration is then applied again, which is always safe.
 */
export async function readAppliedConfig(store: Pick<CatalogStore, 'getSetting'>): Promise<AppliedConfig | undefined> {
  const text = await store.getSetting(appliedConfigSetting);
  if (text === null || text === '') return undefined;
  try {
    const parsed = JSON.parse(text) as Partial<AppliedConfig>;
    if (typeof parsed.sha256 !== 'string' || typeof parsed.sources !== 'object' || typeof parsed.destinations !== 'object') return undefined;
    return {
      sha256: parsed.sha256,
      appliedAt: String(parsed.appliedAt),
      sources: { ...parsed.sources },
      destinations: { ...parsed.destinations },
    };
  } catch {
    return undefined;
  }
}

/** Stores the record, replacing the previous one. */
export async function writeAppliedConfig(store: Pick<CatalogStore, 'setSetting'>, record: AppliedConfig): Promise<void> {
  await store.setSetting(appliedConfigSetting, JSON.stringify(record));
}
