/**
 * The first attempt recorded for a delivery is kept in its own row, as JSON, rather than as
 * rows of `attempts`. Most deliveries succeed at their first attempt, and the row is written
 * then in any case (a HOT update, see migration 4); a row per URL in `attempts`, with its two
 * index entries, cost the database more than the rest of recording the outcome together.
 * Later attempts, and those of a worker whose lease had run out, go to `attempts` as before.
 *
 * The row's new version is that much longer, and a completion writes every row of a page in
 * one transaction, so all their new versions must fit beside the old ones for the updates to
 * stay HOT: pages are now filled to 40 % rather than 50 % (new pages only; pages written
 * before keep their rows). A completion of 60 jobs with bodies of 200, 350 or 500 bytes kept
 * every update HOT at 40 % and not at 50 % (the tests check both sizes of page fill); on a
 * drain of 330-byte bodies, one update in seven at 50 % was not HOT.
 *
 * Adding a column without a default rewrites nothing, so the lock is held only for a moment;
 * rows written before read as having no first attempt kept inline.
 */
export const sql = `
ALTER TABLE deliveries ADD COLUMN first_attempt_log TEXT;
ALTER TABLE deliveries SET (fillfactor = 40);
`;
