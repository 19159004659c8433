/**
 * Views of sources and destinations that are safe to return from the admin API and to
 * log. Write keys, shared secrets, static header values and URL query values never
 * appear: an operator recognises them by a hint, not by the secret.
 */
import type { DestinationConfig, FerryConfig, SourceConfig } from './model.js';

/** Replaces a secret value wherever one would have appeared. */
export const redacted = '[redacted]';

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

/** A webhook entry with header values and URL query values hidden. */
export interface RedactedWebhookEntry {
  url: string;
  /** Header names as configured; every value is `[redacted]`, since headers carry credentials. */
  headers: Record<string, string>;
}

/** A destination without its shared secret or header values. */
export interface RedactedDestination extends Omit<DestinationConfig, 'settings'> {
  settings: {
    webhooks: RedactedWebhookEntry[];
    /** Whether requests are signed; the secret itself is never shown. */
    hasSharedSecret: boolean;
  };
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
 * A URL with the values of its query parameters hidden, since some receivers take a
 * token there (`?token=…`). Path segments are shown: a secret in the path (as in Slack's
 * hook URLs) cannot be told apart from an ordinary path.
 */
export function redactUrl(url: string): string {
  // The common case, on the delivery path: nothing that could be hidden, so no parsing.
  if ((url.startsWith('https://') || url.startsWith('http://')) && !url.includes('?') && !url.includes('@')) return url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return redacted;
  }
  // Returned as written whenever nothing is hidden, so an API client sees its own URL back.
  if (parsed.search === '' && parsed.username === '' && parsed.password === '') return url;
  parsed.username = '';
  parsed.password = '';
  const names = [...parsed.searchParams.keys()];
  parsed.search = names.map((name) => `${encodeURIComponent(name)}=${redacted}`).join('&');
  return parsed.href;
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

/** A destination as the admin API returns it and as it is logged. */
export function redactDestination(destination: DestinationConfig): RedactedDestination {
  return {
    id: destination.id,
    type: destination.type,
    name: destination.name,
    enabled: destination.enabled,
    sources: [...destination.sources],
    settings: {
      webhooks: destination.settings.webhooks.map((entry) => ({
        url: redactUrl(entry.url),
        headers: Object.fromEntries(Object.keys(entry.headers).map((name) => [name, redacted])),
      })),
      hasSharedSecret: destination.settings.sharedSecret !== undefined,
    },
  };
}

/** The whole configuration, safe to log. */
export function redactConfig(config: FerryConfig): RedactedConfig {
  return {
    ...config,
    sources: config.sources.map((s) => redactSource(s)),
    destinations: config.destinations.map((d) => redactDestination(d)),
  };
}
