import type { ErrorClass } from '../model/attempt.js';
import { callTypes } from '../model/message.js';
import type { DeliveryFilter } from './delivery-reads.js';

/**
 * The conditions of a delivery search, shared by both stores (the column names are the
 * same). Each condition holds one `?` for its value; PostgreSQL numbers them.
 */
export interface SearchCondition {
  sql: string;
  value: unknown;
}

/**
 * The conditions of `filter` on `deliveries d` and on `events` (to be applied as
 * `d.event_id IN (SELECT id FROM events WHERE ...)`, so that the events are found through
 * their own index, then their deliveries through `event_id`). Status is each store's own.
 */
export function searchConditions(filter: DeliveryFilter): { deliveries: SearchCondition[]; events: SearchCondition[] } {
  const deliveries: SearchCondition[] = [];
  const events: SearchCondition[] = [];
  const on = (list: SearchCondition[], sql: string, value: unknown) => {
    if (value !== undefined) list.push({ sql, value });
  };
  on(deliveries, 'd.destination_id = ?', filter.destinationId);
  on(deliveries, 'd.source_id = ?', filter.sourceId);
  on(deliveries, 'd.message_id = ?', filter.messageId);
  on(deliveries, 'd.user_id = ?', filter.userId);
  on(events, 'anonymous_id = ?', filter.anonymousId);
  on(events, 'event = ?', filter.event);
  if (filter.type !== undefined) {
    if ((callTypes as readonly string[]).includes(filter.type)) on(events, 'type = ?', filter.type);
    // Said again as the partial index says it: SQLite uses that index only for a query that does.
    else on(deliveries, `d.kind = ? AND d.kind <> 'event'`, filter.type);
  }
  on(events, 'received_at >= ?', filter.receivedAfterMs);
  on(events, 'received_at < ?', filter.receivedBeforeMs);
  return { deliveries, events };
}

/**
 * `LIKE` patterns (escape character `\`) that a dead letter's `last_error` matches when one
 * URL of its last attempt failed with `errorClass`. The text is the retry policy's
 * (`describeResult` in delivery/retry-policy.ts): one `<url> -> <what>` per URL, joined by
 * `; `, where `<what>` is `HTTP <status>` when a response arrived (class `http`) and
 * `<class>` or `<class>: <message>` otherwise. Reading the class from there costs the
 * completion, which every delivery goes through, nothing more to write.
 */
export function errorClassPatterns(errorClass: ErrorClass): string[] {
  if (errorClass === 'http') return ['% -> HTTP %'];
  const c = errorClass.replaceAll('_', '\\_');
  return [`% -> ${c}`, `% -> ${c}: %`, `% -> ${c}; %`];
}
