import { defaultRetention, retentionKinds, type RetentionSettings } from '../model/retention.js';
import type { CatalogStore } from '../store/catalog-store.js';

/** The store's setting that holds the retention (JSON of the kinds set; the others take their defaults). */
export const RETENTION_SETTING = 'retention';

/** The retention in force: what the store holds over the defaults. A stored value that is not valid JSON counts as unset. */
export async function loadRetention(store: Pick<CatalogStore, 'getSetting'>): Promise<RetentionSettings> {
  const raw = await store.getSetting(RETENTION_SETTING);
  const settings: RetentionSettings = { ...defaultRetention };
  if (raw === null) return settings;
  let stored: unknown;
  try {
    stored = JSON.parse(raw);
  } catch {
    return settings;
  }
  if (typeof stored !== 'object' || stored === null) return settings;
  for (const kind of retentionKinds) {
    const days = (stored as Record<string, unknown>)[kind];
    if (typeof days === 'number' && Number.isFinite(days) && days >= 0) settings[kind] = days;
  }
  return settings;
}

/** Stores a complete retention (every kind), which every node reads at its next prune. */
export async function saveRetention(store: Pick<CatalogStore, 'setSetting'>, settings: RetentionSettings): Promise<void> {
  const whole: Record<string, number> = {};
  for (const kind of retentionKinds) whole[kind] = settings[kind];
  await store.setSetting(RETENTION_SETTING, JSON.stringify(whole));
}
