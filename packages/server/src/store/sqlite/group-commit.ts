import type Database from 'better-sqlite3';
import { isSqliteUnavailable } from './sqlite-failure.js';
import type { WriteProbe } from './write-probe.js';

/**
 * When queued work must commit. `durable`: a caller is told "stored" once it commits
 * (ingestion), so the commit is fsynced, at the end of this turn of the event loop. `prompt`:
 * at the end of this turn, without an fsync of its own. `deferred`: within
 * {@link DEFER_MS} (sooner if other work flushes first): delivery bookkeeping, which nobody
 * answers a client on, gains far more from sharing a commit with many others than it loses
 * by waiting a moment.
 */
export type CommitMode = 'durable' | 'prompt' | 'deferred';

/** Longest wait of deferred work for its commit. */
const DEFER_MS = 5;

interface PendingWork {
  run: () => unknown;
  mode: CommitMode;
  // A method signature, so that each item's `resolve` (of its own result type) fits here.
  resolve(value: unknown): void;
  reject: (error: unknown) => void;
}

type ItemResult = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Group commit: all work queued during one turn of the event loop (and deferred work of the
 * last few ms) runs in one transaction, so concurrent requests share one fsync and hot pages
 * are written to the WAL once. Each item runs in its own savepoint, so an item that throws is
 * rolled back and rejected alone.
 */
export class GroupCommit {
  private pending: PendingWork[] = [];
  private flushImmediate: NodeJS.Immediate | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  /** Runs a function in a savepoint of the open transaction; made once (better-sqlite3 builds a wrapper per `transaction()` call). */
  private readonly inSavepoint: (run: () => unknown) => unknown;
  /** Runs a group of queued work in one transaction, each item in its own savepoint. */
  private readonly runGroup: (group: PendingWork[]) => ItemResult[];
  private readonly syncFull: Database.Statement;
  private readonly syncNormal: Database.Statement;

  constructor(
    private readonly db: Database.Database,
    private readonly probe: WriteProbe,
  ) {
    this.inSavepoint = db.transaction((run: () => unknown) => run());
    this.runGroup = db.transaction((group: PendingWork[]) =>
      group.map((p): ItemResult => {
        try {
          return { ok: true, value: this.inSavepoint(p.run) };
        } catch (error) {
          return { ok: false, error };
        }
      }),
    );
    this.syncFull = db.prepare('PRAGMA synchronous = FULL');
    this.syncNormal = db.prepare('PRAGMA synchronous = NORMAL');
  }

  /** Queues `run` for the next group commit; resolves with its result once that commits. */
  run<T>(run: () => T, mode: CommitMode): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ run, mode, resolve, reject });
      this.scheduleFlush(mode !== 'deferred');
    });
  }

  private scheduleFlush(soon: boolean): void {
    if (this.flushImmediate) return;
    if (soon) this.flushImmediate = setImmediate(() => this.flush());
    else this.flushTimer ??= setTimeout(() => this.flush(), DEFER_MS);
  }

  /** Commits the work queued so far now (a closing store's callers are waiting for an answer). */
  flush(): void {
    if (this.flushImmediate) clearImmediate(this.flushImmediate);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushImmediate = undefined;
    this.flushTimer = undefined;
    const group = this.pending;
    this.pending = [];
    if (group.length === 0 || !this.db.open) {
      for (const p of group) p.reject(new Error('the store is closed'));
      return;
    }
    let results: ItemResult[];
    // In WAL mode a FULL commit's fsync also covers every NORMAL commit before it.
    const durable = group.some((p) => p.mode === 'durable');
    try {
      if (durable) this.syncFull.run();
      results = this.runGroup(group);
      this.probe.commitEnded(undefined);
    } catch (error) {
      // The commit itself failed (disk full, read-only file): nothing of the group is stored.
      this.probe.commitEnded(error);
      for (const p of group) p.reject(error);
      return;
    } finally {
      if (durable && this.db.open) this.syncNormal.run();
    }
    group.forEach((p, i) => {
      const r = results[i]!;
      if (r.ok) p.resolve(r.value);
      else {
        // A lock held elsewhere or a full disk may fail each item rather than the commit.
        if (isSqliteUnavailable(r.error)) this.probe.commitEnded(r.error);
        p.reject(r.error);
      }
    });
  }
}
