/**
 * JSON merge patch (RFC 7396): objects merge key by key at every depth, `null` removes a key,
 * anything else (strings, numbers, lists) replaces what was there. Neither argument is
 * changed. Written here rather than taken from a package because it is the RFC's ten-line
 * algorithm, and results are built with `Object.fromEntries`, so a `__proto__` key in a patch
 * stays an ordinary key (then refused by the schema) instead of changing a prototype.
 *
 * @example
 * mergePatch({ enabled: true, settings: { sharedSecret: 's', webhooks: [] } }, { settings: { sharedSecret: null } })
 * // => { enabled: true, settings: { webhooks: [] } }
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const merged = new Map<string, unknown>(isObject(target) ? Object.entries(target) : []);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) merged.delete(key);
    else merged.set(key, mergePatch(merged.get(key), value));
  }
  return Object.fromEntries(merged);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
