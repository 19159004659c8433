import { useEffect, useState } from 'preact/hooks';

/** The hash route as segments: `#/sources/web/live` is `['sources', 'web', 'live']`. */
export function parseHash(hash: string): string[] {
  return hash
    .replace(/^#\/?/, '')
    .split('/')
    .filter((s) => s !== '')
    .map((s) => decodeURIComponent(s));
}

/** The href of a route built from segments, each one encoded. */
export function href(...segments: string[]): string {
  return '#/' + segments.map((s) => encodeURIComponent(s)).join('/');
}

/** Goes to a route. */
export function navigate(...segments: string[]): void {
  location.hash = href(...segments);
}

/** The current route, following hash changes. Hash routes let the server serve one index for every page. */
export function useRoute(): string[] {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const follow = () => setRoute(parseHash(location.hash));
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  return route;
}
