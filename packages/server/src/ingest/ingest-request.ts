import { randomUUID } from 'node:crypto';
import { FerryError, type ErrorCode } from '../errors/error-codes.js';
import type { EventBus } from '../events/event-bus.js';
import type { Catalog } from '../routing/catalog.js';
import { routeMessage, type RoutedDelivery } from '../routing/route.js';
import type { RouteTarget } from '../routing/route-target.js';
import type { NewEvent, NewRejection, Store } from '../store/store.js';
import type { Clock } from '../util/clock.js';
import type { CallType, NormalizedMessage } from '../model/message.js';
import { normalizeMessage, readEnvelope } from './normalize.js';
import { readJsonBody, writeKeyFromBasicAuth } from './read-body.js';
import type { WatchedSources } from './watched-sources.js';

/** One HTTP request to an ingestion route, as the transport hands it over. */
export interface IngestRequest {
  route: 'batch' | CallType;
  rawBody: Buffer | undefined;
  headers: { 'content-encoding'?: string; authorization?: string };
  ip: string | undefined;
  /** The request's id (`X-Request-Id`), carried by the events it causes, so their log lines name it. */
  requestId?: string;
}

/** The answer to send. */
export interface IngestAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** A message refused inside an accepted batch, as reported to the client. */
export interface Rejected {
  index: number;
  code: ErrorCode;
  message: string;
}

/** Dependencies of ingestion. */
export interface IngestDeps {
  store: Store;
  catalog: Catalog;
  clock: Clock;
  /** Told of every request accepted, of refused messages, and of whole requests refused. */
  events: EventBus;
  /** The sources watched message by message (`GET /sources/{id}/live`): only theirs get `ingest:message`. */
  watched: WatchedSources;
  /** Called after a commit that created delivery jobs. */
  onCommitted?: () => void;
}

/**
 * The ingestion pipeline for one request: read, authenticate, validate each message on its
 * own, enrich, route, and commit events with their jobs in one transaction before answering.
 * Request-level problems answer 4xx with nothing stored; a bad message inside a readable
 * batch is reported in the 200 answer and costs its neighbours nothing.
 */
export async function ingestRequest(req: IngestRequest, deps: IngestDeps): Promise<IngestAnswer> {
  const receivedAtMs = deps.clock.now();
  // A Basic auth header is checked before the body is inflated or parsed. Over HTTP, the
  // admission hook has refused a stranger's key before the body was even read; this lookup
  // finds the source, and refuses a key removed since. The body's writeKey is the fallback
  // for clients that send no header.
  const headerKey = writeKeyFromBasicAuth(req.headers.authorization);
  let source = headerKey === undefined ? undefined : deps.catalog.sourceByWriteKey(headerKey);
  if (headerKey !== undefined && !source) return refusal(deps, req.requestId, new FerryError('unauthorized', 'unknown write key'));
  let parsed: unknown;
  try {
    parsed = await readJsonBody(req.rawBody, req.headers);
  } catch (error) {
    if (error instanceof FerryError) return refusal(deps, req.requestId, error);
    throw error;
  }
  const envelope = readEnvelope(parsed, req.route);
  if (!source) {
    const bodyKey = envelope.ok ? envelope.writeKey : bodyWriteKey(parsed);
    source = bodyKey === undefined ? undefined : deps.catalog.sourceByWriteKey(bodyKey);
    if (!source)
      return refusal(
        deps,
        req.requestId,
        new FerryError('unauthorized', bodyKey === undefined ? 'no write key: send it as the Basic auth user name' : 'unknown write key'),
      );
  }
  if (!envelope.ok) return refusal(deps, req.requestId, new FerryError(envelope.code, envelope.message), source.id);

  const targets = deps.catalog.routesOf(source.id);
  // Calls each destination's filter dropped, per destination; told once the commit is done.
  const filtered = new Map<string, number>();
  const meta = { receivedAtMs, ip: req.ip, newMessageId: randomUUID };
  // Someone watches this source's messages one by one: each message's own filtered destinations
  // are kept, and the store tells which were stored. Nobody watching this source, none of it is
  // done, whatever other source is watched.
  const watched = deps.watched.has(source.id);
  const filteredOf: string[][] = [];
  const events: NewEvent[] = [];
  const rejected: Rejected[] = [];
  envelope.messages.forEach((raw, index) => {
    const result = normalizeMessage(raw, envelope.envelope, meta);
    if (!result.ok) {
      rejected.push({ index, code: result.code, message: result.message });
      return;
    }
    const m = result.message;
    events.push({
      sourceId: source.id,
      messageId: m.messageId,
      type: m.type,
      userId: m.userId,
      anonymousId: m.anonymousId,
      event: m.type === 'track' ? m.event : undefined,
      receivedAtMs,
      json: result.json,
      deliveries: watched ? routeWatched(m, targets, deps, filtered, filteredOf) : routeMessage(m, targets, deps.catalog.types, filtered),
    });
  });

  const single = req.route !== 'batch';
  const rejections: NewRejection[] = rejected.map((r) => ({ sourceId: source.id, ...r }));
  try {
    const outcome = await deps.store.ingest({ receivedAtMs, events, rejections, reportStored: watched });
    if (outcome.deliveries > 0) deps.onCommitted?.();
    if (outcome.stored) emitStored(deps, source.id, receivedAtMs, events, outcome.stored, filteredOf);
    if (events.length > 0) deps.events.emit('ingest:accepted', { sourceId: source.id, count: outcome.inserted, duplicates: outcome.duplicates });
    if (filtered.size > 0) {
      deps.events.emit('ingest:filtered', { sourceId: source.id, filtered: [...filtered].map(([destinationId, count]) => ({ destinationId, count })) });
    }
  } catch (error) {
    return refusal(deps, req.requestId, new FerryError('store_unavailable'), source.id, error);
  }
  if (rejected.length > 0) {
    deps.events.emit('ingest:rejected', { sourceId: source.id, rejected: rejected.map(({ index, code }) => ({ index, code })), requestId: req.requestId });
    if (single) {
      const r = rejected[0]!;
      return { status: 400, body: { success: false, errors: [{ code: r.code, message: r.message }] } };
    }
    return { status: 200, body: { success: true, rejected } };
  }
  return { status: 200, body: { success: true } };
}

/**
 * {@link routeMessage} for a watched request: the message's own filtered destinations are kept
 * as the next entry of `filteredOf`, and counted into the request's `filtered` as well.
 */
function routeWatched(
  message: NormalizedMessage,
  targets: readonly RouteTarget[],
  deps: IngestDeps,
  filtered: Map<string, number>,
  filteredOf: string[][],
): RoutedDelivery[] {
  const own = new Map<string, number>();
  const routed = routeMessage(message, targets, deps.catalog.types, own);
  for (const id of own.keys()) filtered.set(id, (filtered.get(id) ?? 0) + 1);
  filteredOf.push([...own.keys()]);
  return routed;
}

/** `ingest:message` for each message of the request that was stored now. */
function emitStored(deps: IngestDeps, sourceId: string, receivedAtMs: number, events: NewEvent[], stored: boolean[], filteredOf: string[][]): void {
  events.forEach((e, i) => {
    if (!stored[i]) return;
    deps.events.emit('ingest:message', {
      sourceId,
      receivedAtMs,
      json: e.json,
      routedTo: e.deliveries.map((d) => d.destinationId),
      filtered: filteredOf[i] ?? [],
    });
  });
}

/** The answer to a request refused whole, of which nothing is stored; `cause` is the store's failure. */
function refusal(deps: IngestDeps, requestId: string | undefined, error: FerryError, sourceId?: string, cause?: unknown): IngestAnswer {
  deps.events.emit('ingest:refused', { code: error.code, status: error.status, sourceId, error: cause, requestId });
  return { status: error.status, body: error.toBody() as unknown as Record<string, unknown> };
}

function bodyWriteKey(parsed: unknown): string | undefined {
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
    const key = (parsed as Record<string, unknown>)['writeKey'];
    if (typeof key === 'string' && key.length > 0) return key;
  }
  return undefined;
}
