import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AudienceSettings } from '../config/model.js';
import type { AudienceChangeNotice, DestinationType } from '../destinations/destination-type.js';
import type { Catalog } from '../routing/catalog.js';
import type { NewDelivery } from '../store/store.js';
import { timersOf, type Clock, type TimerHandle } from '../util/clock.js';
import type { EventBus } from '../events/event-bus.js';
import type { AudienceRecord, MembershipChange, SyncEntry, SyncOutcome } from '../model/audience.js';
import type { AudienceStore } from '../store/audience-store.js';
import { snakeCase } from './snake-case.js';

/** What the sync needs. Time is injected so windows are tested with a ManualClock. */
export interface AudienceSyncOptions {
  audiences: AudienceStore;
  catalog: Catalog;
  clock: Clock;
  logger: Logger;
  settings: AudienceSettings;
  /** Called after a sync queued jobs, so the delivery worker looks at once. */
  onQueued?: () => void;
  /** Makes the messageId of one change; default `aud_` and a random UUID. */
  newMessageId?: () => string;
  /** Told of every sync that ran (`audience:synced`). */
  events?: EventBus;
}

/**
 * Keeps destinations up to date with audiences and computed traits: each sync sends one
 * membership change per changed user to every enabled destination of the audience whose type
 * takes audience changes (Webhooks: an identify call), with the trait
 * `{ <name in snake_case>: true | false | count }`. Syncs run one at a time, in order.
 */
export class AudienceSync {
  private queue: Promise<unknown> = Promise.resolve();
  private timer: TimerHandle | undefined;
  private running = false;
  private readonly newMessageId: () => string;

  constructor(private readonly o: AudienceSyncOptions) {
    this.newMessageId = o.newMessageId ?? (() => `aud_${randomUUID().replaceAll('-', '')}`);
  }

  /** Syncs one audience now; null when it does not exist. */
  sync(id: string): Promise<SyncOutcome | null> {
    return this.serially(() => this.syncOne(id));
  }

  /** Syncs every audience and computed trait, in id order; one that fails is logged and the rest go on. */
  syncAll(): Promise<SyncOutcome[]> {
    return this.serially(async () => {
      const all = [...(await this.o.audiences.list('audience')), ...(await this.o.audiences.list('computed_trait'))];
      all.sort((a, b) => (a.id < b.id ? -1 : 1));
      const outcomes: SyncOutcome[] = [];
      for (const a of all) {
        try {
          const outcome = await this.syncOne(a.id);
          if (outcome) outcomes.push(outcome);
        } catch (err) {
          this.o.logger.error({ err, audienceId: a.id }, 'audience sync failed; its members stay as they were and the next sync retries');
        }
      }
      return outcomes;
    });
  }

  /** Runs {@link syncAll} every `settings.syncIntervalMs`, on the clock's timers (which do not keep the process alive). */
  start(): void {
    this.running = true;
    this.schedule();
  }

  /** Stops the loop and waits for a sync in progress, so the store can close after. */
  async stop(): Promise<void> {
    this.running = false;
    timersOf(this.o.clock).clearTimeout(this.timer);
    this.timer = undefined;
    await this.queue.catch(() => undefined);
  }

  private schedule(): void {
    if (!this.running) return;
    // The next sync is timed from the end of this one, so a slow sync never overlaps itself.
    this.timer = timersOf(this.o.clock).setTimeout(() => {
      this.timer = undefined;
      void this.syncAll()
        .catch((err: unknown) => this.o.logger.error({ err }, 'audience sync loop failed; retrying after the interval'))
        .finally(() => this.schedule());
    }, this.o.settings.syncIntervalMs);
  }

  private serially<T>(run: () => Promise<T>): Promise<T> {
    // One sync at a time: two syncs of one audience interleaving could diff against stale members.
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async syncOne(id: string): Promise<SyncOutcome | null> {
    const nowMs = this.o.clock.now();
    let outcome: SyncOutcome | null;
    try {
      outcome = await this.o.audiences.sync({
        id,
        nowMs,
        deliveriesFor: (audience, changes, syncCount) => this.deliveriesFor(audience, changes, syncCount, nowMs),
      });
    } catch (err) {
      await this.record({ audienceId: id, startedAtMs: nowMs, finishedAtMs: this.o.clock.now(), error: syncFailureText(err) });
      throw err;
    }
    if (outcome) await this.record({ audienceId: id, startedAtMs: nowMs, finishedAtMs: this.o.clock.now(), outcome });
    if (outcome && outcome.added + outcome.removed + outcome.changed > 0) {
      this.o.logger.info(
        { audienceId: id, sync: outcome.syncCount, added: outcome.added, removed: outcome.removed, changed: outcome.changed, queued: outcome.queued },
        'audience synced',
      );
    }
    if (outcome && outcome.queued > 0) this.o.onQueued?.();
    if (outcome) {
      const { syncCount, added, removed, changed, queued } = outcome;
      this.o.events?.emit('audience:synced', { audienceId: id, syncCount, added, removed, changed, queued });
    }
    return outcome;
  }

  /**
   * Adds a sync to the history. Written after the sync committed, so a failure here (the store
   * down) loses the entry only: it is logged, and the sync stands.
   */
  private async record(entry: SyncEntry): Promise<void> {
    try {
      await this.o.audiences.recordSync(entry);
    } catch (err) {
      this.o.logger.warn({ err, audienceId: entry.audienceId }, 'audience sync history not written; the sync itself stands');
    }
  }

  private deliveriesFor(audience: AudienceRecord, changes: readonly MembershipChange[], syncCount: number, nowMs: number): NewDelivery[] {
    // A disabled destination gets nothing, as with events: it receives what happens after it is
    // turned on. A destination deleted since the audience was made is skipped the same way.
    const { catalog } = this.o;
    const targets: { id: string; type: DestinationType }[] = [];
    for (const id of audience.destinationIds) {
      const d = catalog.destination(id);
      const type = d?.enabled ? catalog.types.get(d.type) : undefined;
      if (type?.renderAudienceChange) targets.push({ id, type });
    }
    if (targets.length < audience.destinationIds.length) {
      this.o.logger.debug(
        { audienceId: audience.id, sync: syncCount, active: targets.map((t) => t.id) },
        'audience changes skip disabled or deleted destinations, and those whose type takes none',
      );
    }
    if (targets.length === 0) return [];
    const trait = audience.trait ?? snakeCase(audience.name);
    const out: NewDelivery[] = [];
    // Bodies rendered for one change, by type.
    const bodies = new Map<DestinationType, string>();
    for (const change of changes) {
      // One messageId per change, shared by every destination: the same fact, sent to each.
      const messageId = this.newMessageId();
      const notice: AudienceChangeNotice = { userId: change.userId, messageId, timestampMs: nowMs, traits: { [trait]: change.value } };
      // Rendered once per type, as event bodies are.
      bodies.clear();
      for (const { id, type } of targets) {
        let body = bodies.get(type);
        if (body === undefined) bodies.set(type, (body = type.renderAudienceChange!(notice)));
        out.push({ destinationId: id, kind: 'audience', body, messageId, userId: change.userId });
      }
    }
    return out;
  }
}

/**
 * What the history keeps of a failed sync: the error's kind and code (PostgreSQL's SQLSTATE,
 * SQLite's result code), not its message, which can quote a value from event data and would
 * stay in the history, readable with a read token, after a deletion request. The server's log
 * has the whole error.
 */
export function syncFailureText(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  const kind = err instanceof Error ? err.name : typeof err;
  return `${typeof code === 'string' ? `${kind} ${code}` : kind}: the sync failed and changed nothing; the server's log has the whole error`;
}
