/**
 * Nesting depth of parsed JSON, checked without recursion.
 *
 * Why it matters: `JSON.parse` handles very deep input, but `JSON.stringify` and most code
 * that walks a value recurse and overflow the stack on it (a 500 KB body can nest about
 * 250,000 levels). Checking before anything else walks a message keeps that out of the
 * pipeline, and the check itself must not recurse for the same reason.
 */

/** The deepest nesting a message may have: the message object itself is level 1. */
export const maxMessageDepth = 32;

/**
 * True when `value` is nested no deeper than `maxDepth` levels. Every object or array is a
 * level; the outermost one is level 1 and primitives add none, so `{}` has depth 1,
 * `{"a":[1]}` depth 2 and `"x"` depth 0.
 *
 * Iterative, and it stops at the first container past the limit.
 *
 * @example isWithinJsonDepth({ a: { b: {} } }, 2) // false: depth 3
 */
export function isWithinJsonDepth(value: unknown, maxDepth: number = maxMessageDepth): boolean {
  if (typeof value !== 'object' || value === null) return true;
  if (maxDepth < 1) return false;

  // Two parallel stacks rather than one of tuples: no allocation per container visited.
  const pending: object[] = [value];
  const depths: number[] = [1];
  while (pending.length > 0) {
    const container = pending.pop() as object;
    const depth = depths.pop() as number;
    const children: unknown[] = Array.isArray(container) ? container : Object.values(container);
    for (let i = 0; i < children.length; i++) {
      const child = children[i];
      if (typeof child !== 'object' || child === null) continue;
      if (depth >= maxDepth) return false;
      pending.push(child);
      depths.push(depth + 1);
    }
  }
  return true;
}
