/**
 * What deletion requests need, as SQLite's migration 3: `regulations.plan` and `user_count`
 * (requests done before this forget their user ids now), events by anonymous id, alias calls
 * by `previousId` (an expression index: only alias rows pay for it), and no rejection that
 * quoted the refused value (only those messages hold a double quote; their counts stay).
 *
 * Building the two indexes makes ingestion wait (a SHARE lock on events) for as long as it
 * takes to read the events table once: see docs/operations.md.
 */
export const sql = `
ALTER TABLE regulations ADD COLUMN user_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE regulations ADD COLUMN plan TEXT;
UPDATE regulations SET user_count = json_array_length(user_ids::json);
UPDATE regulations SET user_ids = '[]' WHERE status = 'done';
CREATE INDEX events_anonymous ON events (anonymous_id) WHERE anonymous_id IS NOT NULL;
CREATE INDEX events_alias_previous ON events ((json::jsonb ->> 'previousId')) WHERE type = 'alias';
DELETE FROM rejections WHERE message LIKE '%"%';
`;
