/**
 * Whether an SQLite error means the database is unavailable (locked, full, read-only, cannot
 * be opened) rather than a fault in Ferry: requests answer 503 for those, and the readiness
 * check fails while they last.
 */
export function isSqliteUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|PROTOCOL)/.test(code);
}
