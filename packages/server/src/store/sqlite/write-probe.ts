import type Database from 'better-sqlite3';
import { BUSY_TIMEOUT_MS } from './sqlite-connection.js';

/** While delivery outcomes cannot be recorded, how often a test write is tried. */
const PROBE_INTERVAL_MS = 1000;

/**
 * Whether delivery outcomes can be recorded. A claim only reads, and reads go on while writes
 * fail (a full disk, a lock held by a backup). Sending jobs whose outcomes cannot be recorded
 * would send each again when its lease runs out, so after a failed record claims stop until a
 * test write commits.
 */
export class WriteProbe {
  /** Why the last group of completions could not be recorded, until a test write succeeds. */
  private failing: unknown;
  /** While {@link failing}, when the next test write may be tried. */
  private nextProbeAtMs = 0;
  private readonly probeWrite: Database.Statement<[number]>;

  constructor(private readonly db: Database.Database) {
    this.probeWrite = db.prepare<[number]>(
      `INSERT INTO settings (key, value) VALUES ('store_write_probe', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    );
  }

  /** Records that outcomes could not be written, and why. */
  writesFailed(error: unknown): void {
    this.failing = error;
  }

  /**
   * Returns when writes are known to work; while they fail, tries a test write at most once
   * per {@link PROBE_INTERVAL_MS}.
   *
   * @throws the last write failure, while writes still fail.
   */
  assertWritable(nowMs: number): void {
    if (this.failing === undefined) return;
    if (nowMs < this.nextProbeAtMs) throw this.failing;
    this.nextProbeAtMs = nowMs + PROBE_INTERVAL_MS;
    try {
      // Without waiting for a lock: a held lock is as good an answer as any.
      this.db.pragma('busy_timeout = 0');
      this.probeWrite.run(nowMs);
      this.failing = undefined;
    } catch (error) {
      this.failing = error;
      throw error;
    } finally {
      this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }
}
