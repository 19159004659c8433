import type Database from 'better-sqlite3';
import { BUSY_TIMEOUT_MS } from './sqlite-connection.js';

/** While delivery outcomes cannot be recorded, how often a claim tries a test write. */
const PROBE_INTERVAL_MS = 1000;

/**
 * Whether the store can write, as the last writes found it. Reads go on while writes fail (a
 * full disk, a lock held by a backup), so what claims and readiness need to know is learnt
 * from the writes, and from a test write while they fail.
 */
export class WriteProbe {
  /** Why the last group of completions could not be recorded, until a test write succeeds. */
  private recordsFailing: unknown;
  /** Why the last group commit failed (a full disk, a lock held elsewhere), until one succeeds. */
  private commitFailing: unknown;
  /** While {@link recordsFailing}, when a claim may next try a test write. */
  private nextProbeAtMs = 0;
  private readonly probeWrite: Database.Statement<[number]>;

  constructor(private readonly db: Database.Database) {
    this.probeWrite = db.prepare<[number]>(
      `INSERT INTO settings (key, value) VALUES ('store_write_probe', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    );
  }

  /** Records that outcomes could not be written, and why. */
  recordsFailed(error: unknown): void {
    this.recordsFailing = error;
  }

  /** Records how a group commit ended: `undefined` when it committed. */
  commitEnded(failure: unknown): void {
    this.commitFailing = failure;
  }

  /**
   * Returns when outcomes are known to be recorded. Sending jobs whose outcomes cannot be
   * recorded would send each again when its lease runs out, so after a failed record claims
   * stop until a test write, tried at most once per {@link PROBE_INTERVAL_MS}, commits.
   *
   * @throws the last write failure, while writes still fail.
   */
  assertRecordsWritable(nowMs: number): void {
    if (this.recordsFailing === undefined) return;
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the write's own failure, rethrown as it was caught
    if (nowMs < this.nextProbeAtMs) throw this.recordsFailing;
    this.nextProbeAtMs = nowMs + PROBE_INTERVAL_MS;
    try {
      this.testWrite(nowMs);
      this.recordsFailing = undefined;
    } catch (error) {
      this.recordsFailing = error;
      throw error;
    }
  }

  /**
   * Reads succeed on a full disk, so readiness follows writes: while the last commit (or the
   * last record of outcomes) failed, a test write decides, and its success clears the failure.
   *
   * @throws the test write's failure.
   */
  assertReady(nowMs: number): void {
    if (!this.db.open) throw new Error('the store is closed');
    if (this.commitFailing === undefined && this.recordsFailing === undefined) return;
    this.testWrite(nowMs);
    this.commitFailing = undefined;
    this.recordsFailing = undefined;
  }

  private testWrite(nowMs: number): void {
    try {
      // Without waiting for a lock: a held lock is as good an answer as any, and at once.
      this.db.pragma('busy_timeout = 0');
      this.probeWrite.run(nowMs);
    } finally {
      this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }
}
