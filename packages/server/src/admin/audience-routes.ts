import type { FastifyInstance } from 'fastify';
import { validateAudience } from '../audiences/audience-schema.js';
import type { AudienceKind, AudienceRecord, Rule, SyncOutcome, SyncRecord } from '../model/audience.js';
import type { AudienceStore } from '../store/audience-store.js';
import type { AudienceSync } from '../audiences/audience-sync.js';
import { snakeCase } from '../audiences/snake-case.js';
import { FerryError } from '../errors/error-codes.js';
import type { Catalog } from '../routing/catalog.js';
import type { Clock } from '../util/clock.js';
import { mergePatch } from './merge-patch.js';
import { objectBody, optionalInt, optionalString, pageLimit } from './query-params.js';
import { refuseUnknownKeys } from './unknown-keys.js';

/** What the audience routes need. */
export interface AudienceRouteDeps {
  audiences: AudienceStore;
  sync: AudienceSync;
  catalog: Catalog;
  clock: Clock;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** An audience as the admin API shows it; `trait` is the key its identify calls carry. */
export function toView(a: AudienceRecord) {
  return {
    id: a.id,
    kind: a.kind,
    name: a.name,
    trait: a.trait ?? snakeCase(a.name),
    destinationIds: a.destinationIds,
    sourceIds: a.sourceIds,
    rule: a.rule,
    createdAt: iso(a.createdAtMs),
    memberCount: a.memberCount,
    syncCount: a.syncCount,
    lastSyncedAt: iso(a.lastSyncedAtMs),
  };
}

function toSyncView(o: SyncOutcome) {
  return {
    id: o.id,
    syncCount: o.syncCount,
    syncedAt: iso(o.syncedAtMs),
    added: o.added,
    removed: o.removed,
    changed: o.changed,
    forgotten: o.forgotten,
    queued: o.queued,
    memberCount: o.memberCount,
  };
}

/** One entry of the sync history as the admin API shows it (see `SyncRecord`). */
function toSyncHistoryView(r: SyncRecord) {
  return {
    id: r.id,
    status: r.error === null ? 'done' : 'failed',
    startedAt: iso(r.startedAtMs),
    finishedAt: iso(r.finishedAtMs),
    runs: r.runs,
    syncCount: r.syncCount,
    added: r.added,
    removed: r.removed,
    changed: r.changed,
    forgotten: r.forgotten,
    queued: r.queued,
    memberCount: r.memberCount,
    error: r.error,
  };
}

/**
 * The rule a patch asks for: merged into the current one (`{"minCount": 3}` changes only the
 * count), or, when it names another `type`, taken as it is, since no member of the old rule
 * means anything in the new one.
 */
function patchedRule(current: Rule, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const type = (patch as { type?: unknown }).type;
  return type === undefined || type === current.type ? patch : { ...Object.fromEntries(Object.keys(current).map((k) => [k, null])), ...patch };
}

const collections: { path: string; kind: AudienceKind; noun: string }[] = [
  { path: '/audiences', kind: 'audience', noun: 'audience' },
  { path: '/computed-traits', kind: 'computed_trait', noun: 'computed trait' },
];

/**
 * Admin routes of audiences (`/audiences`) and computed traits (`/computed-traits`): create
 * (which runs the first sync at once, so every current member is sent), list, show, change
 * (a merge patch, the members kept), list the members and the sync history, delete, and sync
 * now; and preview a definition (`POST .../preview`: how many users it would hold now,
 * nothing stored). Register inside the admin scope so its Bearer-token hook applies.
 */
export async function audienceRoutes(app: FastifyInstance, deps: AudienceRouteDeps): Promise<void> {
  const { audiences, sync, catalog, clock } = deps;

  for (const { path, kind, noun } of collections) {
    const find = async (id: string): Promise<AudienceRecord> => {
      const found = await audiences.get(id);
      if (!found || found.kind !== kind) throw new FerryError('not_found', `no ${noun} ${id}`);
      return found;
    };

    app.get(path, async () => ({ [kind === 'audience' ? 'audiences' : 'computedTraits']: (await audiences.list(kind)).map(toView) }));

    app.get<{ Params: { id: string } }>(`${path}/:id`, async (request) => toView(await find(request.params.id)));

    const validBody = (body: unknown) => {
      if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new FerryError('bad_request', 'the body must be a JSON object');
      return validateAudience(body, kind, {
        destinations: catalog.destinations(),
        sourceIds: catalog.sources().map((s) => s.id),
        types: catalog.types,
      });
    };

    app.post(path, async (request, reply) => {
      const definition = validBody(request.body);
      if (!(await audiences.create(definition, clock.now())))
        throw new FerryError('conflict', `id: an audience or computed trait with id ${JSON.stringify(definition.id)} already exists`, 'id');
      // The first sync sends every current member (the spec's "when an audience is first created").
      const first = await sync.sync(definition.id);
      const created = await find(definition.id);
      return reply.code(201).send({ ...toView(created), sync: first ? toSyncView(first) : null });
    });

    // What a create would find now, changing nothing: a read token may ask, and it is not audited.
    app.post(`${path}/preview`, { config: { scope: 'read', audit: { skip: true } } }, async (request) => {
      const count = await audiences.countQualifying(validBody(request.body), clock.now());
      return kind === 'audience' ? { members: count } : { profiles: count };
    });

    // A JSON merge patch of the definition; the members and sync state stay (see docs/audiences.md).
    app.patch<{ Params: { id: string } }>(`${path}/:id`, async (request) => {
      const current = await find(request.params.id);
      const patch = objectBody(request.body);
      refuseUnknownKeys(patch, ['id', 'name', 'destinationIds', 'sourceIds', 'rule'], 'key');
      if (patch.id !== undefined && patch.id !== current.id) throw new FerryError('bad_request', 'id cannot be changed', 'id');
      const before = {
        name: current.name,
        destinationIds: current.destinationIds,
        rule: current.rule,
        ...(current.sourceIds ? { sourceIds: current.sourceIds } : {}),
      };
      const merged = mergePatch(before, patch.rule === undefined ? patch : { ...patch, rule: patchedRule(current.rule, patch.rule) }) as Record<
        string,
        unknown
      >;
      const definition = validateAudience({ ...merged, id: current.id }, kind, {
        destinations: catalog.destinations(),
        sourceIds: catalog.sources().map((s) => s.id),
        types: catalog.types,
      });
      // Receivers hold the members under the key sent so far: a rename keeps it.
      const trait = current.trait ?? snakeCase(current.name);
      const updated = { ...definition, ...(trait === snakeCase(definition.name) ? {} : { trait }) };
      if (!(await audiences.update(updated))) throw new FerryError('not_found', `no ${noun} ${current.id}`);
      return toView(await find(current.id));
    });

    app.get<{ Params: { id: string }; Querystring: { after?: string; limit?: string } }>(
      `${path}/:id/members`,
      { config: { query: ['after', 'limit'] } },
      async (request) => {
        await find(request.params.id);
        const limit = pageLimit(request.query.limit);
        // One more than the page says whether another follows, so the last page never leads to an empty one.
        const found = await audiences.members(request.params.id, { afterUserId: optionalString(request.query.after, 'after'), limit: limit + 1 });
        const members = found.slice(0, limit);
        return { members, next: found.length > limit ? members.at(-1)!.userId : null };
      },
    );

    // Newest first; `next` is the id of the last entry, and `after` takes it back; null when no entry is older.
    app.get<{ Params: { id: string }; Querystring: { after?: string; limit?: string } }>(
      `${path}/:id/syncs`,
      { config: { query: ['after', 'limit'] } },
      async (request) => {
        await find(request.params.id);
        const limit = pageLimit(request.query.limit);
        const beforeId = optionalInt(request.query.after, 'after');
        const found = await audiences.syncs(request.params.id, { ...(beforeId === undefined ? {} : { beforeId }), limit: limit + 1 });
        const syncs = found.slice(0, limit);
        return { syncs: syncs.map(toSyncHistoryView), next: found.length > limit ? String(syncs.at(-1)!.id) : null };
      },
    );

    app.delete<{ Params: { id: string } }>(`${path}/:id`, async (request, reply) => {
      await find(request.params.id);
      await audiences.delete(request.params.id);
      return reply.code(204).send();
    });

    app.post<{ Params: { id: string } }>(`${path}/:id/sync`, async (request) => {
      await find(request.params.id);
      const outcome = await sync.sync(request.params.id);
      if (!outcome) throw new FerryError('not_found', `no ${noun} ${request.params.id}`);
      return toSyncView(outcome);
    });
  }
}
