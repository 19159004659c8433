/**
 * Whether a PostgreSQL error means the database is unavailable (down, unreachable, out of
 * resources, shutting down) rather than a fault in Ferry: requests answer 503 for those, and
 * the readiness check fails while they last.
 */
export function isPgUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  if (typeof code !== 'string') return false;
  return (
    // SQLSTATE classes: connection exceptions (08), insufficient resources (53), operator intervention (57).
    /^(08|53|57)[0-9A-Z]{3}$/.test(code) ||
    // The socket to the server, before any SQLSTATE.
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'].includes(code)
  );
}
