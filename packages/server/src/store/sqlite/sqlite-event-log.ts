import type Database from 'better-sqlite3';
import type { EventLog, IngestOutcome, IngestWrite, RejectionCount, RejectionView } from '../event-log.js';
import { keptRejections, toRejectionView, type RejectionRow } from '../rows.js';
import type { GroupCommit } from './group-commit.js';
import type { SqliteDeliveryRows } from './sqlite-delivery-rows.js';

/** The event log on SQLite: each ingestion request is an item of the next group commit. */
export class SqliteEventLog implements EventLog {
  private readonly insertEvent: Database.Statement<[string, string, string, string | null, string | null, string | null, number, string], { id: number }>;
  private readonly insertRejection: Database.Statement;
  private readonly countRejection: Database.Statement;
  private readonly pruneRejections: Database.Statement;

  constructor(
    private readonly db: Database.Database,
    private readonly commits: GroupCommit,
    private readonly deliveries: SqliteDeliveryRows,
  ) {
    this.insertEvent = db.prepare(
      `INSERT INTO events (source_id, message_id, type, user_id, anonymous_id, event, received_at, json)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source_id, message_id) DO NOTHING RETURNING id`,
    );
    this.insertRejection = db.prepare(`INSERT INTO rejections (source_id, batch_index, code, message, received_at) VALUES (?, ?, ?, ?, ?)`);
    this.countRejection = db.prepare(
      `INSERT INTO rejection_counts (source_id, code, count) VALUES (?, ?, 1)
       ON CONFLICT (source_id, code) DO UPDATE SET count = count + 1`,
    );
    this.pruneRejections = db.prepare(`DELETE FROM rejections WHERE id <= (SELECT MAX(id) FROM rejections) - ${keptRejections}`);
  }

  ingest(write: IngestWrite): Promise<IngestOutcome> {
    // Only accepted events need an fsync before the answer; a write of rejections alone does not.
    return this.commits.run(() => this.deliveries.batch(() => this.apply(write)), write.events.length > 0 ? 'durable' : 'prompt');
  }

  private apply(write: IngestWrite): IngestOutcome {
    const outcome: IngestOutcome = { inserted: 0, duplicates: 0, deliveries: 0 };
    const stored = write.reportStored ? (outcome.stored = [] as boolean[]) : undefined;
    for (const e of write.events) {
      const row = this.insertEvent.get(e.sourceId, e.messageId, e.type, e.userId ?? null, e.anonymousId ?? null, e.event ?? null, e.receivedAtMs, e.json);
      stored?.push(row !== undefined);
      if (row === undefined) {
        outcome.duplicates++;
        continue;
      }
      outcome.inserted++;
      for (const d of e.deliveries) {
        this.deliveries.insert(d.destinationId, e.sourceId, row.id, d.kind, e.messageId, e.userId ?? null, d.body, e.receivedAtMs, e.receivedAtMs);
        outcome.deliveries++;
      }
    }
    this.deliveries.totals.add('events', outcome.inserted);
    if (write.rejections.length > 0) {
      const now = write.receivedAtMs;
      for (const r of write.rejections) {
        this.insertRejection.run(r.sourceId, r.index, r.code, r.message, now);
        this.countRejection.run(r.sourceId, r.code);
      }
      this.pruneRejections.run();
    }
    return outcome;
  }

  async listRejections(args: { sourceId?: string; limit: number }): Promise<RejectionView[]> {
    const rows = (
      args.sourceId
        ? this.db.prepare(`SELECT * FROM rejections WHERE source_id = ? ORDER BY id DESC LIMIT ?`).all(args.sourceId, args.limit)
        : this.db.prepare(`SELECT * FROM rejections ORDER BY id DESC LIMIT ?`).all(args.limit)
    ) as RejectionRow[];
    return rows.map(toRejectionView);
  }

  async rejectionCounts(): Promise<RejectionCount[]> {
    const rows = this.db.prepare(`SELECT source_id, code, count FROM rejection_counts ORDER BY source_id, code`).all() as {
      source_id: string;
      code: string;
      count: number;
    }[];
    return rows.map((r) => ({ sourceId: r.source_id, code: r.code, count: r.count }));
  }
}
