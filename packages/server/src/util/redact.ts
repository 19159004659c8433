/** Replaces a secret value wherever one would have appeared. */
export const redacted = '[redacted]';

/**
 * A URL with the values of its query parameters hidden, since some receivers take a
 * token there (`?token=…`). Path segments are shown: a secret in the path (as in Slack's
 * hook URLs) cannot be told apart from an ordinary path.
 */
export function redactUrl(url: string): string {
  // The common case, on the delivery path: nothing that could be hidden, so no parsing.
  if ((url.startsWith('https://') || url.startsWith('http://')) && !url.includes('?') && !url.includes('@')) return url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return redacted;
  }
  // Returned as written whenever nothing is hidden, so an API client sees its own URL back.
  if (parsed.search === '' && parsed.username === '' && parsed.password === '') return url;
  parsed.username = '';
  parsed.password = '';
  const names = [...parsed.searchParams.keys()];
  parsed.search = names.map((name) => `${encodeURIComponent(name)}=${redacted}`).join('&');
  return parsed.href;
}
