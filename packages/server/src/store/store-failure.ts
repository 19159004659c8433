/**
 * Whether an error comes from the database being unavailable (locked, full, read-only, down,
 * unreachable) rather than from a fault in Ferry: requests answer 503 for those, and the
 * readiness check fails while they last.
 */
export function isStoreFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  if (typeof code !== 'string') return false;
  return (
    /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|PROTOCOL)/.test(code) ||
    // PostgreSQL: connection exceptions (08), insufficient resources (53), operator intervention (57).
    /^(08|53|57)[0-9A-Z]{3}$/.test(code) ||
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'].includes(code)
  );
}
