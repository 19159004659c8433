import type pg from 'pg';
import type { EventLog, IngestOutcome, IngestWrite, RejectionCount, RejectionView } from '../event-log.js';
import { keptRejections, toRejectionView, type RejectionRow } from '../rows.js';
import { queued } from './pg-delivery-rows.js';
import { inTransaction } from './pg-pools.js';

/**
 * The event log on PostgreSQL: each ingestion request commits in its own transaction, its
 * events, delivery rows with their queue rows, and rejections each written by one statement.
 */
export class PgEventLog implements EventLog {
  constructor(private readonly pool: pg.Pool) {}

  async ingest(write: IngestWrite): Promise<IngestOutcome> {
    const outcome: IngestOutcome = { inserted: 0, duplicates: 0, deliveries: 0 };
    if (write.events.length === 0 && write.rejections.length === 0) return outcome;
    return inTransaction(this.pool, async (client) => {
      if (write.events.length > 0) {
        const e = write.events;
        const inserted = await client.query<{ id: number; message_id: string }>(
          `INSERT INTO events (source_id, message_id, type, user_id, anonymous_id, event, received_at, json)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[])
           ON CONFLICT (source_id, message_id) DO NOTHING
           RETURNING id, message_id`,
          [
            e.map((x) => x.sourceId),
            e.map((x) => x.messageId),
            e.map((x) => x.type),
            e.map((x) => x.userId ?? null),
            e.map((x) => x.anonymousId ?? null),
            e.map((x) => x.event ?? null),
            e.map((x) => x.receivedAtMs),
            e.map((x) => x.json),
          ],
        );
        outcome.inserted = inserted.rows.length;
        outcome.duplicates = e.length - inserted.rows.length;
        const idByMessage = new Map(inserted.rows.map((r) => [r.message_id, r.id]));
        const d: {
          destinationId: string;
          sourceId: string;
          eventId: number;
          kind: string;
          messageId: string;
          userId: string | null;
          body: string;
          at: number;
        }[] = [];
        const stored = write.reportStored ? (outcome.stored = [] as boolean[]) : undefined;
        for (const event of e) {
          const eventId = idByMessage.get(event.messageId);
          stored?.push(eventId !== undefined);
          if (eventId === undefined) continue;
          // A messageId repeated inside one write is stored once; route only its first copy.
          idByMessage.delete(event.messageId);
          for (const job of event.deliveries)
            d.push({
              destinationId: job.destinationId,
              sourceId: event.sourceId,
              eventId,
              kind: job.kind,
              messageId: event.messageId,
              userId: event.userId ?? null,
              body: job.body,
              at: event.receivedAtMs,
            });
        }
        if (d.length > 0) {
          await client.query(
            queued(`INSERT INTO deliveries (destination_id, source_id, event_id, kind, message_id, user_id, body, created_at, next_attempt_at)
             SELECT a, b, c, k, m, u, body, t, t FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[])
               AS x(a, b, c, k, m, u, body, t)`),
            [
              d.map((x) => x.destinationId),
              d.map((x) => x.sourceId),
              d.map((x) => x.eventId),
              d.map((x) => x.kind),
              d.map((x) => x.messageId),
              d.map((x) => x.userId),
              d.map((x) => x.body),
              d.map((x) => x.at),
            ],
          );
        }
        outcome.deliveries = d.length;
      }
      if (write.rejections.length > 0) {
        const r = write.rejections;
        const now = write.receivedAtMs;
        await client.query(
          `INSERT INTO rejections (source_id, batch_index, code, message, received_at)
           SELECT s, i, c, m, $5 FROM unnest($1::text[], $2::int[], $3::text[], $4::text[]) AS x(s, i, c, m)`,
          [r.map((x) => x.sourceId), r.map((x) => x.index), r.map((x) => x.code), r.map((x) => x.message), now],
        );
        await client.query(
          `INSERT INTO rejection_counts (source_id, code, count)
           SELECT s, c, COUNT(*) FROM unnest($1::text[], $2::text[]) AS x(s, c) GROUP BY s, c
           ON CONFLICT (source_id, code) DO UPDATE SET count = rejection_counts.count + excluded.count`,
          [r.map((x) => x.sourceId), r.map((x) => x.code)],
        );
        await client.query(`DELETE FROM rejections WHERE id <= (SELECT MAX(id) FROM rejections) - ${keptRejections}`);
      }
      return outcome;
    });
  }

  async listRejections(args: { sourceId?: string; limit: number }): Promise<RejectionView[]> {
    const { rows } = args.sourceId
      ? await this.pool.query<RejectionRow>(`SELECT * FROM rejections WHERE source_id = $1 ORDER BY id DESC LIMIT $2`, [args.sourceId, args.limit])
      : await this.pool.query<RejectionRow>(`SELECT * FROM rejections ORDER BY id DESC LIMIT $1`, [args.limit]);
    return rows.map(toRejectionView);
  }

  async rejectionCounts(): Promise<RejectionCount[]> {
    const { rows } = await this.pool.query<{ source_id: string; code: string; count: number }>(
      `SELECT source_id, code, count FROM rejection_counts ORDER BY source_id, code`,
    );
    return rows.map((r) => ({ sourceId: r.source_id, code: r.code, count: r.count }));
  }
}
