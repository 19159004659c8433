/**
 * How far a deletion request followed alias links (see `LinkedIdentitiesReport` in
 * model/regulation-plan.ts), kept once the request is done and its plan forgotten.
 */
export const sql = `
ALTER TABLE regulations ADD COLUMN linked_identities TEXT;
`;
