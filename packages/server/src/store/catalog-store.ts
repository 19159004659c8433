import type { DestinationConfig, SourceConfig } from '../config/model.js';

/** Sources and destinations as the store keeps them. */
export interface StoredCatalog {
  sources: SourceConfig[];
  destinations: DestinationConfig[];
}

/**
 * The control plane's state: the catalogue (sources and destinations, edited at run time)
 * and key-value settings (e.g. the generated admin token's hash).
 */
export interface CatalogStore {
  /** Every source and destination, each ordered by id. */
  loadCatalog(): Promise<StoredCatalog>;
  saveSource(source: SourceConfig): Promise<void>;
  deleteSource(id: string): Promise<void>;
  saveDestination(destination: DestinationConfig): Promise<void>;
  /**
   * Replaces a destination only if what is stored is still `previous` (as `loadCatalog` gave
   * it): a compare-and-set for read-modify-write changes such as a secret rotation, so that of
   * two concurrent ones (two requests, two nodes) one wins and the other learns it lost.
   * False when the stored destination differs or is gone.
   */
  replaceDestination(next: DestinationConfig, previous: DestinationConfig): Promise<boolean>;
  deleteDestination(id: string): Promise<void>;
  /**
   * Runs `fn` while holding the catalogue's apply lock, which every node of a shared store
   * takes for a configuration apply: two applies (two nodes starting with different files, a
   * start beside `ferry config apply`) never interleave their writes. SQLite: one process, a
   * queue in it. PostgreSQL: an advisory lock of the schema on a session of its own.
   */
  withCatalogLock<T>(fn: () => Promise<T>): Promise<T>;
  getSetting(key: string): Promise<string | null>;
  setSetting(key: string, value: string): Promise<void>;
}
