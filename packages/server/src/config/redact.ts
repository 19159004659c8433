/**
 * Views of sources and destinations that are safe to return from the admin API and to
 * log. Write keys, shared secrets, static header values and URL query values never
 * appear: an operator recognises them by a hint, not by the secret.
 */
import { builtInDestinationTypes, type DestinationRegistry } from '../destinations/registry.js';
import type { DestinationConfig, FerryConfig, SourceConfig } from './model.js';

export { redacted, redactUrl } from '../util/redact.js';

/** Below this length, even four characters are too large a share of the key to show. */
const minLengthForHint = 16;

/** A source without its write key. */
export interface RedactedSource {
  id: string;
  name: string;
  /**
   * `…` and the write key's last 4 characters, so operators can tell keys apart; only `…`
   * for keys shorter than 16 characters.
   */
  writeKeyHint: string;
}

/** A destination without its secrets: its settings as its type shows them. */
export interface RedactedDestination extends Omit<DestinationConfig, 'settings'> {
  settings: object;
}

/** The whole configuration, safe to log at start-up. */
export interface RedactedConfig extends Omit<FerryConfig, 'sources' | 'destinations'> {
  sources: RedactedSource[];
  destinations: RedactedDestination[];
}

/** The hint shown in place of a write key: `…abcd`, or `…` when the key is short. */
export function writeKeyHint(writeKey: string): string {
  return writeKey.length >= minLengthForHint ? `…${writeKey.slice(-4)}` : '…';
}

/**
 * A source as the admin API returns it and as it is logged.
 *
 * @example
 * redactSource({ id: 'app', name: 'App', writeKey: 'wk_0123456789abcdef' });
 * // { id: 'app', name: 'App', writeKeyHint: '…cdef' }
 */
export function redactSource(source: SourceConfig): RedactedSource {
  return { id: source.id, name: source.name, writeKeyHint: writeKeyHint(source.writeKey) };
}

/**
 * How destinations of the types of `types` are shown by the admin API and logged: each type
 * hides its own secrets.
 */
export function destinationRedactor(types: DestinationRegistry): (destination: DestinationConfig) => RedactedDestination {
  return (destination) => ({
    id: destination.id,
    type: destination.type,
    name: destination.name,
    enabled: destination.enabled,
    sources: [...destination.sources],
    // Filters and removals hold no secret: shown as configured, and only when there are some.
    ...(destination.filter === undefined ? {} : { filter: destination.filter }),
    ...(destination.removeFields === undefined ? {} : { removeFields: [...destination.removeFields] }),
    // A type no longer known (its stored destination outlived it) shows nothing of its settings.
    settings: types.get(destination.type)?.redactSettings(destination.settings) ?? {},
    // Public: statuses and thresholds, no secret.
    ...(destination.retryStatuses === undefined ? {} : { retryStatuses: [...destination.retryStatuses] }),
    ...(destination.circuitBreaker === undefined ? {} : { circuitBreaker: { ...destination.circuitBreaker } }),
    ...(destination.rateLimit === undefined ? {} : { rateLimit: { ...destination.rateLimit } }),
    ...(destination.autoDisableAfterMs === undefined ? {} : { autoDisableAfterMs: destination.autoDisableAfterMs }),
  });
}

/** A destination of a built-in type as the admin API returns it and as it is logged. */
export const redactDestination = destinationRedactor(builtInDestinationTypes);

/** The whole configuration, safe to log. */
export function redactConfig(config: FerryConfig): RedactedConfig {
  return {
    ...config,
    sources: config.sources.map((s) => redactSource(s)),
    destinations: config.destinations.map(redactDestination),
  };
}
