import type Database from 'better-sqlite3';
import { Batcher } from '../../util/batcher.js';
import type { Completion } from '../delivery-queue.js';
import { storedText } from '../rows.js';
import type { GroupCommit } from './group-commit.js';
import { holds, type LeaseTable } from './lease-table.js';
import type { CoalescedTask } from '../coalesced-task.js';
import type { SqliteDeliveryRows } from './sqlite-delivery-rows.js';
import type { WriteProbe } from './write-probe.js';

/**
 * Completions on SQLite: outcomes and attempt logs, written in the group commit as deferred
 * work (nobody is answered on them), and kept only while the worker still holds the lease.
 */
export class SqliteCompletions {
  /**
   * The completions of one turn of the event loop go into the next group commit as one item:
   * one savepoint for them all rather than one each (if it fails, every one of them is
   * refused, and their jobs come back when their leases run out).
   */
  private readonly batches = new Batcher<Completion, boolean>(
    (batch) =>
      this.commits
        .run(() => batch.map((c) => this.completeOne(c)), 'deferred')
        .then(
          (kept) => {
            // Only once the outcome is committed: if the commit fails (a full disk), the jobs stay
            // held until their leases run out, instead of being sent again at once, and again.
            for (const c of batch) {
              const lease = this.leases.get(c.id);
              if (lease !== undefined && holds(lease, c)) this.leases.unhold(c.id);
            }
            // So that no byte of the user is left once every notice is through. A reader elsewhere
            // may keep it from finishing: the task then tries again an interval later.
            if (batch.some((c) => c.kind === 'delete' && c.outcome.status === 'succeeded')) this.walTruncation.request().catch(() => {});
            return kept;
          },
          (error: unknown) => {
            this.probe.recordsFailed(error);
            throw error;
          },
        ),
    { maxBatch: Number.POSITIVE_INFINITY, parallel: Number.POSITIVE_INFINITY },
  );
  private readonly deliveryExists: Database.Statement<[number, number | null, number | null], { one: number }>;
  // Positional parameters on the two statements of every delivery: binding by name costs more.
  private readonly insertAttempt: Database.Statement<[number, string, number, number, number | null, string | null, string | null, string | null, string]>;
  private readonly completeSucceeded: Database.Statement<[number, number, number]>;
  private readonly completeRetry: Database.Statement;
  private readonly completeDead: Database.Statement;

  constructor(
    private readonly db: Database.Database,
    private readonly commits: GroupCommit,
    private readonly leases: LeaseTable,
    private readonly probe: WriteProbe,
    private readonly deliveries: SqliteDeliveryRows,
    private readonly walTruncation: CoalescedTask,
  ) {
    this.deliveryExists = db.prepare(`SELECT 1 AS one FROM deliveries WHERE id = ? AND (? IS NULL OR created_at = ?)`);
    this.insertAttempt = db.prepare(
      `INSERT INTO attempts (delivery_id, url, started_at, latency_ms, status_code, error_class, error_message, response_body, trigger)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.completeSucceeded = db.prepare(
      `UPDATE deliveries SET status = 'succeeded', attempt_count = attempt_count + 1, first_attempt_at = ?,
         completed_at = ?, trigger = 'scheduled', last_error = NULL
       WHERE id = ? AND status = 'pending'`,
    );
    this.completeRetry = db.prepare(
      `UPDATE deliveries SET attempt_count = attempt_count + 1, first_attempt_at = @firstAttemptAtMs,
         next_attempt_at = @nextAttemptAtMs, trigger = 'scheduled', last_error = @lastError
       WHERE id = @id AND status = 'pending'`,
    );
    this.completeDead = db.prepare(
      `UPDATE deliveries SET status = 'dead', attempt_count = attempt_count + 1, first_attempt_at = @firstAttemptAtMs,
         completed_at = @nowMs, trigger = 'scheduled', dead_reason = @reason, last_error = @lastError
       WHERE id = @id AND status = 'pending'`,
    );
  }

  complete(completion: Completion): Promise<boolean> {
    return this.batches.add(completion);
  }

  /** Resolves once every completion handed in so far is recorded (or refused). */
  drained(): Promise<void> {
    return this.batches.drained();
  }

  private completeOne(args: Completion): boolean {
    const lease = this.leases.get(args.id);
    let kept = false;
    // Another worker may have taken the job after this lease ran out: its outcome counts, not this one.
    if (lease !== undefined && holds(lease, args)) {
      const base = { id: args.id, nowMs: args.nowMs, firstAttemptAtMs: args.firstAttemptAtMs };
      const o = args.outcome;
      const result =
        o.status === 'succeeded'
          ? this.completeSucceeded.run(args.firstAttemptAtMs, args.nowMs, args.id)
          : o.status === 'pending'
            ? this.completeRetry.run({ ...base, nextAttemptAtMs: o.nextAttemptAtMs, lastError: storedText(o.lastError) })
            : this.completeDead.run({ ...base, reason: o.reason, lastError: storedText(o.lastError) });
      kept = result.changes === 1;
      if (kept && o.status !== 'pending') this.deliveries.counts.adjust(lease.destinationId, -1, o.status === 'dead' ? 1 : 0, o.status === 'succeeded' ? 1 : 0);
      if (kept && o.status === 'succeeded' && args.kind === 'delete') {
        // A notice delivered has done its work; kept, it would name the user it was about.
        this.deliveries.delete([args.id]);
        return kept;
      }
    }
    // A lost lease still logs what was sent; a delivery purged meanwhile (a deletion
    // request) keeps nothing, since a response body may echo the user's data.
    if (kept || this.deliveryExists.get(args.id, args.createdAtMs ?? null, args.createdAtMs ?? null) !== undefined)
      for (const a of args.attempts)
        this.insertAttempt.run(
          args.id,
          storedText(a.url),
          a.startedAtMs,
          a.latencyMs,
          a.statusCode,
          a.errorClass,
          storedText(a.errorMessage),
          storedText(a.responseBody),
          a.trigger,
        );
    return kept;
  }
}
