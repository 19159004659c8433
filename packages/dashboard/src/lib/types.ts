/** `GET /session`: who the token is. */
export interface Session {
  tokenId: string;
  scope: 'admin' | 'read';
}

/** What every page is given. */
export interface PageProps {
  /** The route's segments after the page's own, e.g. `['web', 'live']` under `sources`. */
  params: string[];
  session: Session;
  /** An admin token: the page offers changes. A read token never sees a button that changes something. */
  canWrite: boolean;
}

/** A source as the admin API shows it. */
export interface Source {
  id: string;
  name: string;
  writeKeyHint: string;
}

/** A webhook entry of a destination's settings. */
export interface WebhookEntry {
  url: string;
  headers?: Record<string, string>;
}

/** A destination as the admin API shows it (redacted). */
export interface Destination {
  id: string;
  type: string;
  name: string;
  enabled: boolean;
  sources: string[];
  settings: { webhooks?: WebhookEntry[]; hasSharedSecret?: boolean; [key: string]: unknown };
  [key: string]: unknown;
}

/** One window of a destination's recent attempts. */
export interface AttemptWindow {
  attempts: number;
  succeeded: number;
  successRate: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
  filtered: number;
}

/** `GET /destinations/{id}/stats`. */
export interface DestinationStats {
  destinationId: string;
  pending: number;
  retrying: number;
  dead: number;
  oldestPendingAgeSeconds: number | null;
  windows: { '5m': AttemptWindow; '1h': AttemptWindow };
  failingSince: string | null;
  disabledAt: string | null;
  disabledReason: string | null;
  circuits: { url: string; state: 'closed' | 'open' | 'half-open'; since: string; consecutiveFailures: number }[];
}

/** A destination's stats as `GET /destinations?include=stats` shows them: without `retrying`. */
export type DestinationStatsSummary = Omit<DestinationStats, 'retrying'>;

/** `GET /destinations?include=stats`. */
export interface DestinationsWithStats {
  destinations: (Destination & { stats: DestinationStatsSummary })[];
}

/** `GET /stats`. */
export interface Stats {
  events: number;
  deliveries: Record<string, number>;
  rejections: number;
  sources: { id: string; name: string }[];
  destinations: { id: string; name: string; type: string; enabled: boolean }[];
}

/** `GET /series`. */
export interface Series {
  bucketSeconds: number;
  buckets: { t: string | number; accepted: number; delivered: number; retried: number; dead: number }[];
}
