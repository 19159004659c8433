/**
 * The class of a dead letter's last failure, read from its `lastError` as the server's
 * `errorClass` filter reads it (`url -> HTTP 503`, `url -> timeout: …`): each URL's part.
 */
export function errorClassesOf(lastError: string | null): string[] {
  if (!lastError) return [];
  return [...lastError.matchAll(/-> (HTTP \d+|[a-z_]+)/g)].map((m) => (m[1]!.startsWith('HTTP') ? 'http' : m[1]!));
}
