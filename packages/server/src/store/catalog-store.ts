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
  deleteDestination(id: string): Promise<void>;
  getSetting(key: string): Promise<string | null>;
  setSetting(key: string, value: string): Promise<void>;
}
