// The admin API's records behind the Deliveries, Dead letters, Deletion requests and
// Audiences pages (docs/admin-api.md, docs/audiences.md), as the dashboard reads them.

/** A delivery as `GET /deliveries` lists it. */
export interface Delivery {
  id: number;
  destinationId: string;
  sourceId: string | null;
  kind: 'event' | 'delete' | 'audience';
  status: 'pending' | 'succeeded' | 'dead';
  messageId: string | null;
  userId: string | null;
  anonymousId: string | null;
  type: string | null;
  event: string | null;
  receivedAt: string | null;
  attemptCount: number;
  createdAt: string;
  firstAttemptAt: string | null;
  nextAttemptAt: string | null;
  completedAt: string | null;
  deadReason: string | null;
  lastError: string | null;
}

/** One call to one URL, from the attempt log. */
export interface Attempt {
  url: string;
  startedAt: string;
  latencyMs: number | null;
  statusCode: number | null;
  errorClass: string | null;
  errorMessage: string | null;
  responseBody: string | null;
  trigger: string;
}

/** `GET /deliveries/{id}`: the delivery with the exact body sent and its attempts, oldest first. */
export interface DeliveryDetail extends Delivery {
  body: string;
  attempts: Attempt[];
}

/** A page of deliveries (`GET /deliveries`, `GET /dead-letters`). */
export interface DeliveryPage {
  deliveries: Delivery[];
  next: string | null;
}

/** A bulk replay run in batches. */
export interface ReplayJob {
  id: string;
  status: 'running' | 'done' | 'failed';
  total: number;
  replayed: number;
  createdAt: string;
  finishedAt: string | null;
  error: string | null;
  filter: Record<string, unknown>;
}

/** What `POST /dead-letters/replay` answers. */
export type ReplayAnswer = { dryRun: true; wouldReplay: number } | { replayed: number } | { job: ReplayJob };

/** A deletion request. */
export interface Regulation {
  id: string;
  userIds: string[];
  userCount: number;
  sourceIds: string[] | null;
  status: 'pending' | 'done';
  createdAt: string;
  finishedAt: string | null;
  eventsDeleted: number;
  deliveriesDeleted: number;
  notificationsQueued: number;
  linkedIdentities: { followed: number; skipped: number; reason: string | null } | null;
}

/** An audience's or computed trait's rule. */
export type AudienceRule =
  | { type: 'event'; event: string; minCount?: number; withinDays?: number }
  | { type: 'trait'; trait: string; equals: unknown }
  | { type: 'event_count'; event: string; withinDays?: number };

/** The two kinds, and the admin path of each. */
export type AudienceKind = 'audience' | 'computed_trait';

/** An audience or computed trait as the admin API shows it. */
export interface Audience {
  id: string;
  kind: AudienceKind;
  name: string;
  trait: string;
  destinationIds: string[];
  sourceIds: string[] | null;
  rule: AudienceRule;
  createdAt: string;
  memberCount: number;
  syncCount: number;
  lastSyncedAt: string | null;
}

/** What one sync did (`POST /audiences/{id}/sync`, and `sync` in a create's answer). */
export interface SyncResult {
  id: string;
  syncCount: number;
  syncedAt: string;
  added: number;
  removed: number;
  changed: number;
  forgotten: number;
  queued: number;
  memberCount: number;
}

/** One entry of an audience's sync history (`GET …/{id}/syncs`): one sync, or a run of quiet ones folded together. */
export interface SyncHistoryEntry {
  id: number;
  status: 'done' | 'failed';
  startedAt: string;
  finishedAt: string;
  runs: number;
  syncCount: number | null;
  added: number | null;
  removed: number | null;
  changed: number | null;
  forgotten: number | null;
  queued: number | null;
  memberCount: number | null;
  error: string | null;
}

/** A member and the value last queued for it. */
export interface Member {
  userId: string;
  value: unknown;
}
