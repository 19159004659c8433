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
 */
export class LinkedIdentities {
  /** Alias links by user id, both ways. */
  private readonly aliases = new Map<string, Set<string>>();
  private readonly explored = new Set<string>();
  private readonly anonymous = new Map<string, Set<string>>();

  constructor(private readonly named: readonly string[]) {
    for (const id of named) this.node(id);
  }

  /** User ids whose alias calls have not been read yet; each is returned once. */
  unexplored(): string[] {
    const ids = [...this.aliases.keys()].filter((id) => !this.explored.has(id));
    for (const id of ids) this.explored.add(id);
    return ids;
  }

  /** Adds alias calls in which one of the ids given by {@link unexplored} is either side. */
  addAliases(links: readonly AliasLink[]): void {
    for (const [previousId, userId] of links) {
      this.node(previousId).add(userId);
      this.node(userId).add(previousId);
    }
  }

  /** Every user id found: the users named and those linked to them. */
  userIds(): string[] {
    return [...this.aliases.keys()];
  }

  /** Adds the anonymous ids seen with the user ids of {@link userIds}. */
  addAnonymous(links: readonly AnonymousLink[]): void {
    for (const [userId, anonymousId] of links) {
      let set = this.anonymous.get(userId);
      if (!set) this.anonymous.set(userId, (set = new Set()));
      set.add(anonymousId);
    }
  }

  /** Every anonymous id whose events without a userId go (see {@link RegulationPlan.anonymousIds}). */
  anonymousIds(): string[] {
    const all = new Set(this.aliases.keys());
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
      const anonymous = new Set(users);
      for (const u of users) for (const a of this.anonymous.get(u) ?? []) anonymous.add(a);
      const sources = new Set<string>();
      for (const [sourceId, userId] of byUser) if (users.has(userId)) sources.add(sourceId);
      for (const [sourceId, anonymousId] of byAnonymous) if (anonymous.has(anonymousId)) sources.add(sourceId);
      affected[id] = [...sources].sort();
    }
    return { maxEventId, userIds: this.userIds(), anonymousIds: this.anonymousIds(), affected };
  }

  /** The user ids reachable from `id` through alias links. */
  private linkedTo(id: string): Set<string> {
    const seen = new Set([id]);
    const stack = [id];
    for (let next = stack.pop(); next !== undefined; next = stack.pop())
      for (const other of this.aliases.get(next) ?? [])
        if (!seen.has(other)) {
          seen.add(other);
          stack.push(other);
        }
    return seen;
  }

  private node(id: string): Set<string> {
    let set = this.aliases.get(id);
    if (!set) this.aliases.set(id, (set = new Set()));
    return set;
  }
}
