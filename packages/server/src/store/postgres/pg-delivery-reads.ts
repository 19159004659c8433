import type pg from 'pg';
import type { DeliveryDetail, DeliveryFilter, DeliveryReads, DeliveryView } from '../delivery-reads.js';
import { errorClassPatterns, searchConditions } from '../delivery-search.js';
import { deliveryEventColumns, toDeliveryView, type AttemptRow, type DeliveryRow } from '../rows.js';
import { attemptLog } from './attempt-log.js';

/**
 * A delivery as the admin API shows it: while pending, its due time (a lease's end while
 * held) is the queue row's. Reads `deliveries d LEFT JOIN delivery_queue q`.
 */
const deliveryColumns = `d.id, d.destination_id, d.source_id, d.kind, d.status, d.message_id, d.user_id, d.attempt_count, d.created_at,
  d.first_attempt_at, COALESCE(q.next_attempt_at, d.next_attempt_at) AS next_attempt_at, d.completed_at, d.dead_reason, d.last_error,
  ${deliveryEventColumns}`;

/**
 * The statement of a delivery search and its parameters: a page in id order. Pending
 * deliveries are the queue's rows, found from there; dead letters through the dead-letter
 * index; the conditions on the event find the events through their own index, then their
 * deliveries through `deliveries_event`. Exported for the test of its plans.
 */
export function searchQuery(filter: DeliveryFilter): { sql: string; params: unknown[] } {
  const { deliveries, events } = searchConditions(filter);
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (clause: string, value: unknown) => {
    params.push(value);
    return clause.replace('?', `$${params.length}`);
  };
  for (const c of deliveries) where.push(add(c.sql, c.value));
  if (filter.status) where.push(add('d.status = ?', filter.status));
  // The dead-letter index holds the rows with a reason, which are exactly the dead ones.
  if (filter.status === 'dead') where.push('d.dead_reason IS NOT NULL');
  if (filter.deadSinceMs !== undefined) where.push(add('d.completed_at >= ?', filter.deadSinceMs));
  if (filter.deadUntilMs !== undefined) where.push(add('d.completed_at < ?', filter.deadUntilMs));
  // The patterns escape with a backslash, PostgreSQL's default.
  if (filter.errorClass !== undefined) where.push(add('d.last_error LIKE ANY(?::text[])', errorClassPatterns(filter.errorClass)));
  if (events.length > 0) where.push(`d.event_id IN (SELECT id FROM events WHERE ${events.map((c) => add(c.sql, c.value)).join(' AND ')})`);
  if (filter.afterId !== undefined) where.push(add('d.id > ?', filter.afterId));
  params.push(filter.limit);
  const join = filter.status === 'pending' ? 'JOIN' : 'LEFT JOIN';
  const sql = `SELECT ${deliveryColumns} FROM deliveries d ${join} delivery_queue q ON q.delivery_id = d.id LEFT JOIN events e ON e.id = d.event_id
    ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY d.id LIMIT $${params.length}`;
  return { sql, params };
}

/** Deliveries as operators read them on PostgreSQL: a pending one's due time comes from its queue row. */
export class PgDeliveryReads implements DeliveryReads {
  constructor(private readonly pool: pg.Pool) {}

  async listDeliveries(filter: DeliveryFilter): Promise<DeliveryView[]> {
    const { sql, params } = searchQuery(filter);
    const { rows } = await this.pool.query<DeliveryRow>(sql, params);
    return rows.map(toDeliveryView);
  }

  async getDelivery(id: number): Promise<DeliveryDetail | null> {
    const { rows } = await this.pool.query<DeliveryRow & { body: string; first_attempt_log: string | null }>(
      `SELECT ${deliveryColumns}, d.body, d.first_attempt_log FROM deliveries d LEFT JOIN delivery_queue q ON q.delivery_id = d.id LEFT JOIN events e ON e.id = d.event_id WHERE d.id = $1`,
      [id],
    );
    const row = rows[0];
    if (!row) return null;
    const attempts = await this.pool.query<AttemptRow>(`SELECT * FROM attempts WHERE delivery_id = $1 ORDER BY id`, [id]);
    return { delivery: toDeliveryView(row), body: row.body, attempts: attemptLog(row.first_attempt_log, attempts.rows) };
  }
}
