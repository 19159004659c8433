import type pg from 'pg';
import type { NewDelivery } from '../delivery-queue.js';

/*
 * Writes of `deliveries` rows that several roles share: every delivery row has a queue row
 * while it is pending (migration 4), and the two are written and deleted together.
 */

/**
 * Inserts delivery rows (the INSERT given, without RETURNING) and their queue rows, due when
 * the delivery row says, in one statement.
 */
export const queued = (insert: string): string => `WITH d AS (${insert} RETURNING id, destination_id, next_attempt_at)
  INSERT INTO delivery_queue (delivery_id, destination_id, next_attempt_at) SELECT id, destination_id, next_attempt_at FROM d`;

/** Inserts deliveries that are not tied to a stored event (deletion notices, audience identifies), due at once. */
export async function insertLoose(db: pg.Pool | pg.PoolClient, d: readonly NewDelivery[], nowMs: number): Promise<void> {
  await db.query(
    queued(`INSERT INTO deliveries (destination_id, source_id, event_id, kind, message_id, user_id, body, created_at, next_attempt_at)
     SELECT a, b, NULL, k, m, u, body, $7, $7 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
       AS x(a, b, k, m, u, body)`),
    [
      d.map((x) => x.destinationId),
      d.map((x) => x.sourceId ?? null),
      d.map((x) => x.kind),
      d.map((x) => x.messageId ?? null),
      d.map((x) => x.userId ?? null),
      d.map((x) => x.body),
      nowMs,
    ],
  );
}

/**
 * Deletes deliveries (ids read once: read again by each statement, a delivery queued in
 * between would lose its row but keep its queue row, or the other way round) and their attempts.
 */
export async function deleteDeliveries(client: pg.PoolClient | pg.Pool, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  // The queue rows first, in the order the claim and the completion lock them.
  await client.query(
    `DELETE FROM delivery_queue WHERE delivery_id IN (SELECT delivery_id FROM delivery_queue WHERE delivery_id = ANY($1::bigint[]) ORDER BY delivery_id FOR UPDATE)`,
    [ids],
  );
  // Deliveries before their attempts, locked in id order: a completion logging an attempt
  // for one of them holds a key-share lock on it until it commits, so the attempts deleted
  // after (by a statement of their own, which sees that commit) include its row.
  await client.query(`DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE)`, [ids]);
  // A replay that committed between the two statements queued one of them again, after the
  // first saw its queue: without this a queue row would be left with no delivery, leased forever.
  await client.query(`DELETE FROM delivery_queue WHERE delivery_id = ANY($1::bigint[])`, [ids]);
  await client.query(`DELETE FROM attempts WHERE delivery_id = ANY($1::bigint[])`, [ids]);
}
