/**
 * A destination's `removeFields` compiled once per catalogue load into a function that gives
 * the call its body is rendered from: the stored call is left as it is (other destinations and
 * the event log keep every field), and only the objects on a removed path are copied.
 */
import { fieldPathSegments } from '../model/field-path.js';
import type { NormalizedMessage } from '../model/message.js';

/** The keys to remove under one object: `true` removes the key, a tree goes inside it. */
interface RemovalTree {
  [key: string]: true | RemovalTree;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The call without the fields named (validated paths inside `properties`, `traits` or
 * `context`, `config/filter-schema.ts`). A path that the call does not have removes nothing; a
 * path that also names a key inside a removed one is covered by it.
 *
 * @example
 * const strip = compileRemoval(['properties.email', 'context.traits.phone']);
 * strip(message).properties; // message.properties without email
 */
export function compileRemoval(paths: readonly string[]): (message: NormalizedMessage) => NormalizedMessage {
  // Prototype-free nodes, read by own keys only: a path segment such as `constructor` must
  // name a key of the call, never reach into the built-in objects.
  const tree: RemovalTree = Object.create(null) as RemovalTree;
  for (const path of paths) {
    const segments = fieldPathSegments(path);
    let node: RemovalTree | undefined = tree;
    for (let i = 0; node !== undefined && i < segments.length; i++) {
      const key = segments[i]!;
      if (i === segments.length - 1) node[key] = true;
      else {
        const next: true | RemovalTree | undefined = Object.hasOwn(node, key) ? node[key] : undefined;
        // A removed key takes everything inside it along.
        node = next === true ? undefined : (next ?? (node[key] = Object.create(null) as RemovalTree));
      }
    }
  }
  return (message) => pruned(message, tree) as NormalizedMessage;
}

/** `object` without the keys of `tree`, copied only where something is removed; the object itself when nothing is. */
function pruned(object: Record<string, unknown>, tree: RemovalTree): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(tree)) {
    if (!Object.hasOwn(object, key)) continue;
    const sub = tree[key]!;
    if (sub === true) {
      copy ??= { ...object };
      delete copy[key];
      continue;
    }
    const inner = object[key];
    if (!isPlainObject(inner)) continue;
    const next = pruned(inner, sub);
    if (next !== inner) (copy ??= { ...object })[key] = next;
  }
  return copy ?? object;
}
