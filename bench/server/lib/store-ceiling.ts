/**
 * Ceiling of the ingestion benchmark (TypeScript via tsx; better-sqlite3 only, no HTTP): the
 * store alone. The same schema as Ferry's SQLite store (its migrations, from the built
 * `packages/server/dist`), WAL with `synchronous = FULL`, inserting the same event row and
 * one delivery-job row per event, in transactions of `batch` events, for at most
 * `maxEvents` events or `durationS` seconds. Answers {events, ms} over IPC.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrations } from '../../../packages/server/dist/store/sqlite/migrations/index.js';
import { eventJson } from './common.js';

process.on('message', (m: any) => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-bench-store-'));
  const db = new Database(join(dir, 'ferry.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  for (const mig of migrations) db.exec(mig.sql);
  const insertEvent = db.prepare(
    `INSERT INTO events (source_id, message_id, type, user_id, anonymous_id, event, received_at, json)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source_id, message_id) DO NOTHING RETURNING id`,
  );
  const insertDelivery = db.prepare(
    `INSERT INTO deliveries (destination_id, source_id, event_id, kind, message_id, user_id, body, created_at, next_attempt_at)
     VALUES (@destinationId, @sourceId, @eventId, @kind, @messageId, @userId, @body, @nowMs, @nowMs)`,
  );
  // Row contents of the same size as Ferry's: the normalised message (~480 B) and the webhook body (~330 B).
  const stored = (id: string, i: number) =>
    eventJson(id, i).slice(0, -1) +
    `,"context":{"library":{"name":"analytics-node","version":"3.1.0"},"ip":"127.0.0.1"},"integrations":{},"originalTimestamp":"2025-01-01T12:00:00.000Z","receivedAt":"2025-01-01T12:00:00.100Z"}`;
  const body = (id: string, i: number) => `{"version":1,` + eventJson(id, i).slice(1);
  const tx = db.transaction((from: number, n: number, nowMs: number) => {
    for (let i = from; i < from + n; i++) {
      const id = `store-${i}`;
      const row = insertEvent.get('bench', id, 'track', `user-${i % 1000}`, null, 'Order Completed', nowMs, stored(id, i)) as { id: number };
      insertDelivery.run({ destinationId: 'hooks', sourceId: 'bench', eventId: row.id, kind: 'event', messageId: id, userId: `user-${i % 1000}`, body: body(id, i), nowMs });
    }
  });
  const started = performance.now();
  const deadline = started + m.durationS * 1000;
  let events = 0;
  while (events < m.maxEvents && performance.now() < deadline) {
    tx(events, m.batch, Date.now());
    events += m.batch;
  }
  const ms = performance.now() - started;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  process.send!({ id: m.id, events, ms });
});
process.on('disconnect', () => process.exit(0));
