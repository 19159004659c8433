import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { AuditLog, AuditObject } from '../store/audit-log.js';
import type { Clock } from '../util/clock.js';
import { redacted } from '../util/redact.js';

/**
 * How a route is written to the audit log, when what `auditChanges` derives from its path and
 * method is poor. Set in the route's `config.audit`.
 */
export interface AuditRouteConfig {
  /** The action, e.g. `config.apply`; default `<kind>.<verb>` (see {@link auditChanges}). */
  action?: string;
  /** The kind of object it acts on; default the first segment of its path after `/v1`, singular. */
  kind?: string;
  /** Not written at all: a POST that changes nothing (a plan, a dry run on a route of its own). */
  skip?: boolean;
  /** Written though it changes nothing: a GET that reveals a secret (`GET /sources/{id}/write-key`). */
  always?: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by a handler whose request turned out to change nothing (a dry run): no audit entry. */
    auditSkip?: boolean;
  }
  interface FastifyContextConfig {
    /** How the route is written to the audit log; see `admin/audit.ts`. */
    audit?: AuditRouteConfig;
  }
}

/**
 * The current state of an object of one kind, secrets masked as the admin API shows them;
 * `undefined` or null when there is none.
 */
export type ObjectReader = (id: string) => unknown;

/** What the audit hooks need. */
export interface AuditDeps {
  log: AuditLog;
  clock: Clock;
  logger: Logger;
  /** Readers of the kinds whose before and after are read from the catalogue or the store (`source`, `destination`, `token`...). */
  readers: Readonly<Record<string, ObjectReader>>;
}

/** Methods that change something: each such request is written to the audit log. */
const changeMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** An answer larger than this is not copied into `after` (a marker says so): the log keeps what changed, not bulk. */
const maxAfterBytes = 256 * 1024;

/** Keys whose string values are secrets wherever they appear in an answer kept as `after`. */
const secretKey = /secret|password|passwd|credential|private.?key|api.?key|write.?key|authorization|^token$/i;

/** What the hook before the handler found, for the hook that writes the entry. */
interface Pending {
  action: string;
  kind: string;
  id: string | undefined;
  before: unknown;
}

const pending = new WeakMap<FastifyRequest, Pending>();

/**
 * Writes every change made through the admin API to the audit log: each POST, PUT, PATCH and
 * DELETE (and each request of a route whose `config.audit.always` is set) that reached a
 * route with a valid token, whatever its outcome (a refusal of a `read`
 * token, a 400 and a failure included; an unknown path or a request without a valid token is
 * not). Register it in the admin scope, before its routes: it covers every route there,
 * those added later too, without their help.
 *
 * An entry holds who (`tokenId`), what (`method`, `path` without the query, `action`), when,
 * the `object` (`{kind, id}`), the status answered, and the object `before` and `after`,
 * secrets masked:
 * - `kind` is the first segment of the route's path after `/v1`, singular (`destinations` ->
 *   `destination`); the `id` is the route's `:id`, else the `id` of a successful answer (a
 *   create); no id, no object.
 * - `action` is `<kind>.<verb>`: the last fixed segment of the path after the first
 *   (`/dead-letters/:id/replay` -> `dead-letter.replay`), else by method: POST `create`, PUT
 *   and PATCH `update`, DELETE `delete`.
 * - `before` and `after` of a kind with a reader (sources, destinations, tokens, audiences)
 *   are its redacted view as the admin API shows it, read before the handler and after it;
 *   of any other kind `before` is null and `after` the answer, its secret-looking keys
 *   masked. A failed change has `after` null and its error code in `error`.
 *
 * The entry is written before the answer leaves, so a caller that got an answer finds it. If
 * the write fails, the change stands and the failure is logged at `error`.
 */
export function auditChanges(scope: FastifyInstance, deps: AuditDeps): void {
  scope.addHook('preHandler', async (request) => {
    if (!isAudited(request)) return;
    const { action, kind } = describe(request);
    const id = paramId(request);
    const reader = deps.readers[kind];
    const before = id !== undefined && reader ? await reader(id) : undefined;
    pending.set(request, { action, kind, id, before });
  });

  scope.addHook('onSend', async (request, reply, payload) => {
    if (!isAudited(request) || !request.adminToken) return payload;
    try {
      await deps.log.append(await entryFor(request, reply, payload, deps));
    } catch (err) {
      deps.logger.error({ err, reqId: request.id, method: request.method, url: request.url.split('?')[0] }, 'audit entry not written');
    }
    return payload;
  });
}

function isAudited(request: FastifyRequest): boolean {
  const config = request.routeOptions.config.audit;
  return (changeMethods.has(request.method) || config?.always === true) && !request.is404 && config?.skip !== true && request.auditSkip !== true;
}

async function entryFor(request: FastifyRequest, reply: FastifyReply, payload: unknown, deps: AuditDeps) {
  const found = pending.get(request) ?? { ...describe(request), id: paramId(request), before: undefined };
  const answer = parseAnswer(payload);
  const ok = reply.statusCode < 400;
  const id = found.id ?? (ok && request.method === 'POST' ? answerId(answer) : undefined);
  const object: AuditObject | null = id === undefined ? null : { kind: found.kind, id };
  const reader = deps.readers[found.kind];
  let after: unknown = null;
  if (ok) after = reader ? (id === undefined ? null : await reader(id)) : maskAnswer(answer, payload);
  return {
    atMs: deps.clock.now(),
    tokenId: request.adminToken!.id,
    method: request.method,
    path: request.url.split('?')[0]!,
    action: found.action,
    object,
    status: reply.statusCode,
    error: ok ? null : errorCode(answer),
    before: found.before ?? null,
    after: after ?? null,
  };
}

/** The kind and action of a request's route. */
function describe(request: FastifyRequest): { action: string; kind: string } {
  const config = request.routeOptions.config.audit ?? {};
  const pattern = request.routeOptions.url ?? request.url.split('?')[0]!;
  const segments = pattern
    .replace(/^.*?\/v1\//, '')
    .split('/')
    .filter(Boolean);
  const kind = config.kind ?? singular(segments[0] ?? 'admin');
  const fixed = segments.filter((s) => !s.startsWith(':'));
  const verb = fixed.length > 1 ? fixed.at(-1)! : verbOf(request.method);
  return { kind, action: config.action ?? `${kind}.${verb}` };
}

function verbOf(method: string): string {
  if (method === 'POST') return 'create';
  if (method === 'DELETE') return 'delete';
  return 'update';
}

function singular(collection: string): string {
  if (collection.endsWith('ies')) return `${collection.slice(0, -3)}y`;
  if (collection.endsWith('s') && !collection.endsWith('ss')) return collection.slice(0, -1);
  return collection;
}

function paramId(request: FastifyRequest): string | undefined {
  const id = (request.params as Record<string, unknown> | undefined)?.['id'];
  return typeof id === 'string' ? id : undefined;
}

function parseAnswer(payload: unknown): unknown {
  const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : undefined;
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

function answerId(answer: unknown): string | undefined {
  const id = answer !== null && typeof answer === 'object' ? (answer as Record<string, unknown>)['id'] : undefined;
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined;
}

function errorCode(answer: unknown): string | null {
  const errors = answer !== null && typeof answer === 'object' ? (answer as { errors?: unknown }).errors : undefined;
  const code = Array.isArray(errors) ? (errors[0] as { code?: unknown } | undefined)?.code : undefined;
  return typeof code === 'string' ? code : null;
}

function maskAnswer(answer: unknown, payload: unknown): unknown {
  const size = typeof payload === 'string' ? Buffer.byteLength(payload) : Buffer.isBuffer(payload) ? payload.length : 0;
  if (size > maxAfterBytes) return { omitted: `an answer of ${size} bytes` };
  return maskSecrets(answer);
}

/**
 * A copy of a JSON value with every secret-looking value masked: every string under a key
 * like `token`, `secret`, `password`, `writeKey` or `authorization` (at any depth below it),
 * and every value of a `headers` object. Booleans and numbers stay (`hasSharedSecret` says
 * nothing).
 * A second guard behind the answers' own redaction, which must already hide every secret.
 */
export function maskSecrets(value: unknown, key = '', inSecret = false): unknown {
  const secret = inSecret || secretKey.test(key);
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, key, secret));
  if (value !== null && typeof value === 'object') {
    const headers = /^headers$/i.test(key);
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, headers && v !== null ? redacted : maskSecrets(v, k, secret)]),
    );
  }
  return typeof value === 'string' && secret ? redacted : value;
}
