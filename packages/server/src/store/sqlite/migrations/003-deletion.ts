/**
 * What deletion requests need to find everything of a user, and to keep nothing of them
 * once done:
 * - `regulations.plan`: what a request deletes, fixed before its first batch (see
 *   model/regulation-plan.ts); `user_count`, kept once the user ids are forgotten.
 *   Requests done before this forget their user ids now.
 * - events by anonymous id, and alias calls by `previousId` (an expression index: only alias
 *   rows pay for it), so the identities linked to a user are found without reading every event.
 * - rejections that quoted the refused value (`invalid_timestamp`, `invalid_type`; only those
 *   messages hold a double quote) are deleted: the value may be a user's data, and what a
 *   request deletes is found by user id. Their counts stay.
 */
export const sql = `
ALTER TABLE regulations ADD COLUMN user_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE regulations ADD COLUMN plan TEXT;
UPDATE regulations SET user_count = json_array_length(user_ids);
UPDATE regulations SET user_ids = '[]' WHERE status = 'done';
CREATE INDEX events_anonymous ON events (anonymous_id) WHERE anonymous_id IS NOT NULL;
CREATE INDEX events_alias_previous ON events (json_extract(json, '$.previousId')) WHERE type = 'alias';
DELETE FROM rejections WHERE message LIKE '%"%';
`;
