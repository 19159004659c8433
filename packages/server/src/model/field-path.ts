/**
 * Paths into a stored call, as a destination's filter and field removals name them:
 * `properties.plan`, `traits.email`, `context.app.version`. The grammar lives here, below both
 * the configuration that checks a path and the routing that follows it, so the two agree.
 */

/** The objects of a call a path may go into, key by key. */
export const fieldPathRoots = ['properties', 'traits', 'context'] as const;

/** The call's own top-level fields a filter may name alone (a path of one segment). */
export const topLevelFilterFields = ['type', 'userId', 'anonymousId', 'messageId', 'event', 'name', 'category', 'groupId', 'previousId'] as const;

/** At most this many segments: a path deeper than any real call is a mistake. */
export const maxFieldPathSegments = 16;

const roots: ReadonlySet<string> = new Set(fieldPathRoots);
const topLevel: ReadonlySet<string> = new Set(topLevelFilterFields);

/** The segments of a path: `context.app.version` → `['context', 'app', 'version']`. */
export function fieldPathSegments(path: string): string[] {
  return path.split('.');
}

/**
 * Why a path is refused, or undefined. A filter may name a root alone (`traits`, to ask whether
 * the call has any) or one of {@link topLevelFilterFields}; a removal names a key inside a root
 * (`properties.email`), since the call's own fields are what its body is made of.
 *
 * @param use What the path is for: `filter` or `remove`.
 */
export function checkFieldPath(path: string, use: 'filter' | 'remove'): string | undefined {
  const segments = fieldPathSegments(path);
  const rootList = fieldPathRoots.join(', ');
  if (segments.some((s) => s === '')) return `must be keys joined by "." with none empty, such as properties.plan; got ${JSON.stringify(path)}`;
  // They would name an object's prototype or constructor wherever a path is followed or built.
  const reserved = segments.find((s) => s === '__proto__' || s === 'constructor' || s === 'prototype');
  if (reserved !== undefined) return `must not name ${reserved}`;
  if (segments.length > maxFieldPathSegments) return `at most ${maxFieldPathSegments} keys deep (got ${segments.length})`;
  const [first] = segments as [string, ...string[]];
  if (use === 'remove') {
    if (!roots.has(first) || segments.length < 2) return `must name a key inside ${rootList}, such as properties.email; got ${JSON.stringify(path)}`;
    return undefined;
  }
  if (roots.has(first)) return undefined;
  if (topLevel.has(first)) return segments.length === 1 ? undefined : `${first} has no keys inside it; got ${JSON.stringify(path)}`;
  return `must start with ${rootList}, or be one of ${topLevelFilterFields.join(', ')}; got ${JSON.stringify(path)}`;
}
