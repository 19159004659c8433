import type { RegulationPlan } from '../model/regulation-plan.js';

/** The columns of a pending `regulations` row that say whose events it deletes. */
export interface PendingRegulationRow {
  user_ids: string;
  source_ids: string | null;
  plan: string | null;
}

/** The identities of an event that a deletion request may name. */
export interface ScreenedEvent {
  sourceId: string;
  userId: string | null;
  anonymousId: string | null;
}

/** Identities whose events are being deleted, in one scope of sources (null: every source). */
interface Scope {
  sourceIds: ReadonlySet<string> | null;
  userIds: ReadonlySet<string>;
  anonymousIds: ReadonlySet<string>;
}

/**
 * Whether an event belongs to a user a pending deletion request names, read from the pending
 * requests' rows: an archive replay must not send it again (once a request is done, its events
 * are gone and there is nothing to screen). A request whose plan is made names the linked
 * identities too, as the purge deletes them: the users and their alias links by user id, and
 * the anonymous ids seen with them on events that carry no user id. Before its plan is made,
 * the users named, and their ids as anonymous ids (an alias may name one as `previousId`).
 */
export function deletionScreen(pending: readonly PendingRegulationRow[]): (event: ScreenedEvent) => boolean {
  if (pending.length === 0) return () => false;
  const scopes: Scope[] = pending.map((row) => {
    const named = JSON.parse(row.user_ids) as string[];
    const plan = row.plan === null ? null : (JSON.parse(row.plan) as RegulationPlan);
    return {
      sourceIds: row.source_ids === null ? null : new Set(JSON.parse(row.source_ids) as string[]),
      userIds: new Set([...named, ...(plan?.userIds ?? [])]),
      anonymousIds: new Set([...named, ...(plan?.anonymousIds ?? [])]),
    };
  });
  return (event) =>
    scopes.some(
      (s) =>
        (s.sourceIds === null || s.sourceIds.has(event.sourceId)) &&
        (event.userId !== null ? s.userIds.has(event.userId) : event.anonymousId !== null && s.anonymousIds.has(event.anonymousId)),
    );
}

/** Every user id and anonymous id pending requests name, whatever their scope: what a count leaves out. */
export function screenedIdentities(pending: readonly PendingRegulationRow[]): { userIds: string[]; anonymousIds: string[] } {
  const userIds = new Set<string>();
  const anonymousIds = new Set<string>();
  for (const row of pending) {
    const named = JSON.parse(row.user_ids) as string[];
    const plan = row.plan === null ? null : (JSON.parse(row.plan) as RegulationPlan);
    for (const id of [...named, ...(plan?.userIds ?? [])]) userIds.add(id);
    for (const id of [...named, ...(plan?.anonymousIds ?? [])]) anonymousIds.add(id);
  }
  return { userIds: [...userIds], anonymousIds: [...anonymousIds] };
}

/**
 * Whether a pending request in the scope of `sourceIds` has no plan yet. Until its plan is made,
 * the identities linked to its users (an anonymous id seen with them before an identify, an
 * alias) are not known, so no screen can keep their events out: an archive batch waits instead.
 */
export function unplannedInScope(pending: readonly PendingRegulationRow[], sourceIds: readonly string[]): boolean {
  return pending.some((row) => {
    if (row.plan !== null) return false;
    if (row.source_ids === null) return true;
    const scope = JSON.parse(row.source_ids) as string[];
    return scope.some((id) => sourceIds.includes(id));
  });
}
