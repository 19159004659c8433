/** Request headers as Node (`req.headers`, lower-case names), Express or Fetch (`Headers`) give them. */
export type HeadersLike = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

/** The first value of a header, looked up in any case; undefined when absent. */
export function headerValue(headers: HeadersLike, name: string): string | undefined {
  if (typeof headers.get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const lower = name.toLowerCase();
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() === lower) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}
