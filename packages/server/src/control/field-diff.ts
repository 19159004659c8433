/**
 * The fields in which two versions of a source or destination differ, each shown with its
 * secrets masked. Which values are secret is what the object's redacted view (the one the
 * admin API shows) says: a field shown there as it is configured is public, a field shown
 * otherwise (a URL with its query values hidden, a header value `[redacted]`) is shown as the
 * redacted view shows it, and a field the view leaves out (a write key, a shared secret) as
 * `[redacted]`. So a destination type's own secrets are masked without this module knowing
 * them.
 */
import { formatPath } from '../config/schema-rules.js';
import { redacted } from '../util/redact.js';
import { sameJson } from './config-hash.js';

/** One field that differs, masked. A field absent on one side has no `old` (or `new`). */
export interface FieldChange {
  /** E.g. `settings.webhooks[0].url`, as validation errors name paths. */
  path: string;
  old?: unknown;
  new?: unknown;
  /** Set when a value shown is not the configured one: the field holds a secret. */
  secret?: true;
}

type Segment = string | number;

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The fields in which `old` and `next` differ, down to the leaves: objects key by key, lists
 * of objects item by item, anything else (a list of ids, a string) as one value. A side that
 * is missing counts as an empty object or list, so a created object lists every field it has.
 *
 * @param oldView The redacted view of `old`; `nextView` of `next`.
 */
export function diffFields(old: unknown, next: unknown, oldView: unknown, nextView: unknown): FieldChange[] {
  const out: FieldChange[] = [];
  walk(old, next, [], (path, a, b) => out.push(masked(path, a, b, oldView, nextView)));
  return out;
}

function walk(a: unknown, b: unknown, path: Segment[], emit: (path: Segment[], a: unknown, b: unknown) => void): void {
  if (sameJson(a, b)) return;
  if ((isRecord(a) || a === undefined) && (isRecord(b) || b === undefined) && (a !== undefined || b !== undefined)) {
    const left = a ?? {};
    const right = b ?? {};
    const keys = [...Object.keys(right), ...Object.keys(left).filter((k) => !(k in right))];
    for (const key of keys) walk(left[key], right[key], [...path, key], emit);
    return;
  }
  const itemsAreObjects = (list: unknown) => Array.isArray(list) && list.some(isRecord);
  if ((Array.isArray(a) || a === undefined) && (Array.isArray(b) || b === undefined) && (itemsAreObjects(a) || itemsAreObjects(b))) {
    const left = a ?? [];
    const right = b ?? [];
    for (let i = 0; i < Math.max(left.length, right.length); i++) walk(left[i], right[i], [...path, i], emit);
    return;
  }
  emit(path, a, b);
}

function masked(path: Segment[], a: unknown, b: unknown, oldView: unknown, nextView: unknown): FieldChange {
  const change: FieldChange = { path: formatPath(path) };
  let secret = false;
  const show = (raw: unknown, view: unknown): unknown => {
    const shown = lookup(view, path);
    const value = shown.found ? shown.value : redacted;
    if (!sameJson(value, raw)) secret = true;
    return value;
  };
  if (a !== undefined) change.old = show(a, oldView);
  if (b !== undefined) change.new = show(b, nextView);
  if (secret) change.secret = true;
  return change;
}

function lookup(root: unknown, path: readonly Segment[]): { found: boolean; value?: unknown } {
  let node: unknown = root;
  for (const key of path) {
    if (typeof key === 'number' ? !Array.isArray(node) || key >= node.length : !isRecord(node) || !Object.hasOwn(node, key)) return { found: false };
    node = (node as Record<Segment, unknown>)[key];
  }
  return node === undefined ? { found: false } : { found: true, value: node };
}
