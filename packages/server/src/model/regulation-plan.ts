/**
 * What a deletion request deletes, worked out once before the first row goes and stored with
 * the request: the purge runs in batches (each its own transaction), and one resumed after a
 * crash must delete the same, even though the events that linked the identities may be gone.
 */
export interface RegulationPlan {
  /**
   * The highest event id when the plan was made: events stored after it are kept (SQLite may
   * give a new event the id of one just deleted, which is then deleted too).
   */
  maxEventId: number;
  /** The users named, and every user id an alias call links to one of them (either way). */
  userIds: string[];
  /**
   * Anonymous ids that appear on a stored event together with one of {@link userIds}, and
   * those user ids themselves (an alias may name an anonymous id as `previousId`): their
   * events that carry no userId go too. Events that carry another user's id stay.
   */
  anonymousIds: string[];
  /** Per user named, the sources in scope that hold events this request deletes (sorted). */
  affected: Record<string, string[]>;
  /** How far alias links were followed. */
  linkedIdentities: LinkedIdentitiesReport;
}

/**
 * How far a deletion request followed alias links, as its answer shows it: `followed`, the
 * linked user ids whose data it deletes besides the users named; `skipped`, the ids an alias
 * call linked that it did not follow; `reason`, why (null when none was skipped).
 */
export interface LinkedIdentitiesReport {
  followed: number;
  skipped: number;
  reason: 'limit_exceeded' | 'placeholder_or_shared_id' | null;
}

/** Linked user ids a request follows at most when its settings do not say. */
export const defaultMaxLinkedUsers = 100;

/**
 * Ids that buggy clients send in place of a real one (lowercased): many unrelated people are
 * linked through them, so a link through one says nothing about who is who.
 */
const placeholderIds = new Set([
  '',
  'undefined',
  'null',
  'nil',
  'none',
  '0',
  '-1',
  'nan',
  'false',
  'true',
  'anonymous',
  'unknown',
  'guest',
  'user',
  '[object object]',
]);

/** True for an id a link is never followed through (see {@link placeholderIds}). */
export function isPlaceholderId(id: string): boolean {
  return placeholderIds.has(id.trim().toLowerCase());
}

/** Events deleted per transaction when a request does not say. */
export const defaultPurgeBatchSize = 1000;

/** One alias call as stored: `previousId` and the `userId` it was linked to. */
export type AliasLink = readonly [previousId: string, userId: string];
/** A userId and an anonymousId seen together on one stored event. */
export type AnonymousLink = readonly [userId: string, anonymousId: string];
/** A source holding events of an identity (a user id or an anonymous id). */
export type HeldBy = readonly [sourceId: string, identity: string];

/**
 * The identities linked to the users a request names, gathered from what the store finds.
 * A store reads alias links until {@link unexplored} is empty, then anonymous links, then
 * where the events to delete are, and gets the plan. Each user named keeps its own set, so
 * its notice goes only to the sources that held its own data.
 *
 * A wrong link deletes another person's data, so links are followed only where they tell
 * one person apart: never through a placeholder id (`undefined`, `0`, ...) nor through a
 * shared id (the `previousId` of alias calls to two or more user ids, say a shared device or
 * a client's constant); and when more than `maxLinkedUsers` ids are linked, none is followed:
 * the request deletes only the named users' own data and that of the anonymous ids seen with
 * them. The plan's {@link LinkedIdentitiesReport} says which happened.
 */
export class LinkedIdentities {
  /** Alias links by id, both ways, between the ids followed (the users named among them). */
  private readonly aliases = new Map<string, Set<string>>();
  private readonly explored = new Set<string>();
  /** Ids linked by an alias call and not followed. */
  private readonly skipped = new Set<string>();
  /** Shared ids: no link through them is followed, even a named user's. */
  private readonly shared = new Set<string>();
  private exceeded = false;
  private readonly anonymous = new Map<string, Set<string>>();

  constructor(
    private readonly named: readonly string[],
    private readonly maxLinkedUsers = defaultMaxLinkedUsers,
  ) {
    for (const id of named) this.node(id);
  }

  /** Ids whose alias calls have not been read yet; each is returned once. None once over the limit. */
  unexplored(): string[] {
    if (this.exceeded) return [];
    const ids = [...this.aliases.keys()].filter((id) => !this.explored.has(id) && !isPlaceholderId(id));
    for (const id of ids) this.explored.add(id);
    return ids;
  }

  /** Adds the alias calls in which one of the ids given by {@link unexplored} is either side (all of them). */
  addAliases(links: readonly AliasLink[]): void {
    const targets = new Map<string, Set<string>>();
    for (const [previousId, userId] of links) this.linkSet(targets, previousId).add(userId);
    // Before any link of it is followed: an id is explored with every alias call that names it.
    for (const [previousId, userIds] of targets) if (userIds.size > 1) this.refuse(previousId);
    for (const [previousId, userId] of links) {
      if ([previousId, userId].some((id) => this.shared.has(id) || isPlaceholderId(id))) {
        for (const id of [previousId, userId]) if (!this.aliases.has(id)) this.skipped.add(id);
        continue;
      }
      this.node(previousId).add(userId);
      this.node(userId).add(previousId);
    }
    if (this.aliases.size - new Set(this.named).size > this.maxLinkedUsers) this.exceeded = true;
  }

  /** Every user id whose data goes: the users named and, within the limit, those linked to them. */
  userIds(): string[] {
    return this.exceeded ? [...new Set(this.named)] : [...this.aliases.keys()];
  }

  /** Adds the anonymous ids seen with the user ids of {@link userIds}; placeholder and shared ids are not taken. */
  addAnonymous(links: readonly AnonymousLink[]): void {
    for (const [userId, anonymousId] of links)
      if (!isPlaceholderId(anonymousId) && !this.shared.has(anonymousId)) this.linkSet(this.anonymous, userId).add(anonymousId);
  }

  /** Every anonymous id whose events without a userId go (see {@link RegulationPlan.anonymousIds}). */
  anonymousIds(): string[] {
    const all = new Set(this.userIds().filter((id) => !isPlaceholderId(id)));
    for (const set of this.anonymous.values()) for (const id of set) all.add(id);
    return [...all];
  }

  /**
   * The plan, given where the events to delete are: `byUser` the sources of events carrying
   * one of {@link userIds}, `byAnonymous` those of events carrying only one of
   * {@link anonymousIds}.
   */
  plan(maxEventId: number, byUser: readonly HeldBy[], byAnonymous: readonly HeldBy[]): RegulationPlan {
    const affected: Record<string, string[]> = {};
    for (const id of this.named) {
      const users = this.linkedTo(id);
      const anonymous = new Set([...users].filter((u) => !isPlaceholderId(u)));
      for (const u of users) for (const a of this.anonymous.get(u) ?? []) anonymous.add(a);
      const sources = new Set<string>();
      for (const [sourceId, userId] of byUser) if (users.has(userId)) sources.add(sourceId);
      for (const [sourceId, anonymousId] of byAnonymous) if (anonymous.has(anonymousId)) sources.add(sourceId);
      affected[id] = [...sources].sort();
    }
    return { maxEventId, userIds: this.userIds(), anonymousIds: this.anonymousIds(), affected, linkedIdentities: this.report() };
  }

  private report(): LinkedIdentitiesReport {
    const linked = new Set([...this.aliases.keys(), ...this.skipped]);
    for (const id of this.named) linked.delete(id);
    if (this.exceeded) return { followed: 0, skipped: linked.size, reason: 'limit_exceeded' };
    const followed = this.userIds().length - new Set(this.named).size;
    return { followed, skipped: linked.size - followed, reason: linked.size > followed ? 'placeholder_or_shared_id' : null };
  }

  /** The user ids reachable from `id` through alias links. */
  private linkedTo(id: string): Set<string> {
    const seen = new Set([id]);
    if (this.exceeded) return seen;
    const stack = [id];
    for (let next = stack.pop(); next !== undefined; next = stack.pop())
      for (const other of this.aliases.get(next) ?? [])
        if (!seen.has(other)) {
          seen.add(other);
          stack.push(other);
        }
    return seen;
  }

  /** Stops following links through `id`: it links nobody; a user named keeps its own data in the request. */
  private refuse(id: string): void {
    for (const other of this.aliases.get(id) ?? []) this.aliases.get(other)?.delete(id);
    this.shared.add(id);
    this.explored.add(id);
    if (this.named.includes(id)) this.aliases.get(id)?.clear();
    else {
      this.aliases.delete(id);
      this.skipped.add(id);
    }
  }

  private node(id: string): Set<string> {
    return this.linkSet(this.aliases, id);
  }

  private linkSet(map: Map<string, Set<string>>, id: string): Set<string> {
    let set = map.get(id);
    if (!set) map.set(id, (set = new Set()));
    return set;
  }
}
