import type Database from 'better-sqlite3';
import type { ClaimedDelivery, ClaimRequest } from '../delivery-queue.js';
import { claimColumns, toClaimed, type ClaimTuple } from '../rows.js';
import type { LeaseTable } from './lease-table.js';
import type { WriteProbe } from './write-probe.js';

/** One claim in this many reads the due jobs from the start (see {@link SqliteClaims.claim}). */
const FULL_READ_EVERY = 8;

/** A claimed row with its place in the due index: {@link claimColumns}, then next_attempt_at. */
type DueClaimTuple = ClaimTuple & { readonly 11: number };

/** Whether a row comes after (due, id) in the due index's order. */
const laterInLine = (row: DueClaimTuple, due: number, id: number): boolean => row[11] > due || (row[11] === due && row[0] > id);

/**
 * A claim that reads on from the last job claimed, (due, id): the rest of that due time by id,
 * then later due times. Two seeks, because a row-value bound (next_attempt_at, id) > (?, ?)
 * is not a seek in SQLite: it read every job sharing the cursor's due time (a replay, an
 * audience sync, a busy millisecond of ingestion) from the first, again at every claim.
 * Exported for the test of its plan.
 */
export const claimAfterSql = `SELECT * FROM (
    SELECT ${claimColumns}, next_attempt_at FROM deliveries INDEXED BY deliveries_due
    WHERE status = 'pending' AND destination_id = @destination AND next_attempt_at = @due AND next_attempt_at <= @now AND id > @id
    ORDER BY id LIMIT @limit)
  UNION ALL
  SELECT * FROM (
    SELECT ${claimColumns}, next_attempt_at FROM deliveries INDEXED BY deliveries_due
    WHERE status = 'pending' AND destination_id = @destination AND next_attempt_at > @due AND next_attempt_at <= @now
    ORDER BY next_attempt_at, id LIMIT @limit)
  LIMIT @limit`;

/**
 * Claims on SQLite: reads of the deliveries_due index, with leases taken in the
 * {@link LeaseTable} (a claim writes nothing to the file).
 */
export class SqliteClaims {
  /** Held jobs are skipped in the index (which holds their ids) before any row is read. */
  private readonly claimFree: Database.Statement<[string, number, string, number], DueClaimTuple>;
  private readonly claimAfter: Database.Statement<[{ destination: string; now: number; due: number; id: number; limit: number }], DueClaimTuple>;
  private readonly dueTimes: Database.Statement<[string, number], { id: number; due: number }>;

  constructor(
    private readonly db: Database.Database,
    private readonly leases: LeaseTable,
    private readonly probe: WriteProbe,
  ) {
    this.claimFree = db
      .prepare<[string, number, string, number], DueClaimTuple>(
        `SELECT ${claimColumns}, next_attempt_at FROM deliveries INDEXED BY deliveries_due
         WHERE status = 'pending' AND destination_id = ? AND next_attempt_at <= ? AND id NOT IN (SELECT value FROM json_each(?))
         ORDER BY next_attempt_at, id LIMIT ?`,
      )
      .raw(true);
    this.claimAfter = db.prepare<[{ destination: string; now: number; due: number; id: number; limit: number }], DueClaimTuple>(claimAfterSql).raw(true);
    this.dueTimes = db.prepare(
      `SELECT id, next_attempt_at AS due FROM deliveries WHERE status = 'pending' AND destination_id = ?
       ORDER BY next_attempt_at, id LIMIT ?`,
    );
  }

  nextDueAt(destinationIds: string[]): number | null {
    let due: number | null = null;
    for (const id of destinationIds) {
      // One seek in the deliveries_due index per destination (MIN over `IN (...)` would walk
      // every pending row). A held job is due when its lease runs out (it was due when claimed),
      // so the scan goes on past held jobs to the first free one.
      for (const row of this.dueTimes.all(id, this.leases.heldCount(id) + 1)) {
        const lease = this.leases.get(row.id);
        const at = lease === undefined ? row.due : lease.untilMs;
        if (due === null || at < due) due = at;
        if (lease === undefined) break;
      }
    }
    return due;
  }

  /**
   * Reads due jobs from the deliveries_due index, on from the last job claimed, or from the
   * start skipping those held under a live lease (see below for when), and leases them.
   *
   * @throws the last write failure while outcomes cannot be recorded (see {@link WriteProbe}),
   * or the database's error.
   */
  claim(args: ClaimRequest): ClaimedDelivery[] {
    if (!this.db.open) throw new Error('the store is closed');
    const { destinationId, owner, nowMs, leaseMs, limit } = args;
    this.probe.assertRecordsWritable(nowMs);
    this.leases.sweep(nowMs, leaseMs);
    const held = this.leases.heldBy(destinationId);
    let cursor = this.leases.cursor(destinationId);
    if (held.size === 0) cursor = undefined;
    let rows: DueClaimTuple[] | undefined;
    // In a backlog the jobs held are the first due, and skipping them cost each claim as much
    // as the jobs it took. So most claims read on after the last job claimed; one in
    // FULL_READ_EVERY, and any that finds fewer than it asked for, reads from the start,
    // skipping the jobs held, to find those before that point that are free again (a lease
    // that ran out, a job handed back).
    if (cursor && cursor.after < FULL_READ_EVERY - 1) {
      const after = this.claimAfter.all({ destination: destinationId, now: nowMs, due: cursor.due, id: cursor.id, limit });
      if (after.length === limit) {
        rows = after;
        cursor.after++;
      }
    }
    if (!rows) {
      const live: number[] = [];
      for (const [id, lease] of held) if (lease.untilMs > nowMs) live.push(id);
      rows = this.claimFree.all(destinationId, nowMs, live.length > 0 ? JSON.stringify(live) : '[]', limit);
      if (cursor) cursor.after = 0;
    }
    const until = nowMs + leaseMs;
    for (const row of rows) this.leases.hold(row[0], { owner, destinationId, createdAtMs: row[9], untilMs: until, sweepAtMs: until + leaseMs });
    // The last in due order. SQLite returns a UNION ALL's parts in turn, which the LIMIT relies
    // on; were that ever not so, a claim could take later jobs before the rest of the cursor's
    // due time, and those would wait for the next read from the start: the cursor must still
    // be the furthest job claimed.
    let last: DueClaimTuple | undefined;
    for (const row of rows) if (!last || laterInLine(row, last[11], last[0])) last = row;
    if (last && (!cursor || laterInLine(last, cursor.due, cursor.id)))
      this.leases.setCursor(destinationId, { due: last[11], id: last[0], after: cursor?.after ?? 0 });
    else if (!cursor) this.leases.dropCursor(destinationId);
    return rows.map(toClaimed);
  }
}
