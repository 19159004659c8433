import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { retentionKinds, type RetentionSettings } from '../model/retention.js';
import type { CatalogStore } from '../store/catalog-store.js';
import { loadRetention, saveRetention } from './retention-settings.js';

/** The store's setting that holds the SHA-256 of the last `retention:` section applied from a file. */
export const RETENTION_APPLIED_SETTING = 'retention_applied';

function digest(settings: RetentionSettings): string {
  return createHash('sha256')
    .update(JSON.stringify(retentionKinds.map((k) => settings[k])))
    .digest('hex');
}

/**
 * Applies the configuration file's `retention:` section as the catalogue is applied: only when
 * it differs from the section last applied, so a change made since through the admin API
 * survives restarts with the same file. Each kind it changes is logged at `warn`. A file
 * without the section changes nothing.
 *
 * @returns Whether the section was applied.
 */
export async function applyRetentionIfChanged(
  store: Pick<CatalogStore, 'getSetting' | 'setSetting' | 'withCatalogLock'>,
  desired: RetentionSettings | undefined,
  logger: Logger,
): Promise<boolean> {
  if (desired === undefined) return false;
  const sha256 = digest(desired);
  return store.withCatalogLock(async () => {
    if ((await store.getSetting(RETENTION_APPLIED_SETTING)) === sha256) return false;
    const current = await loadRetention(store);
    await saveRetention(store, desired);
    await store.setSetting(RETENTION_APPLIED_SETTING, sha256);
    for (const kind of retentionKinds) {
      if (current[kind] !== desired[kind])
        logger.warn({ kind, old: current[kind], new: desired[kind] }, `the configuration file changed retention.${kind} (days; 0 keeps forever)`);
    }
    return true;
  });
}
