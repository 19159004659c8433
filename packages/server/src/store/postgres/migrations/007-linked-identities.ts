/** As SQLite's migration 4: how far a deletion request followed alias links, kept once it is done. */
export const sql = `
ALTER TABLE regulations ADD COLUMN linked_identities TEXT;
`;
