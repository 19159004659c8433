/**
 * A destination's filter (docs/configuration.md, "Filters") compiled into a predicate on a
 * call: once per catalogue load, so that each call costs only the comparisons themselves (no
 * parsing of paths, lists turned into sets, single-item groups unwrapped).
 */
import type { DestinationFilter, FieldCondition, FilterCondition, FilterScalar } from '../config/model.js';
import { fieldPathSegments } from '../model/field-path.js';
import type { NormalizedMessage } from '../model/message.js';

/** Whether a call passes: true, deliver it. */
export type CallPredicate = (message: NormalizedMessage) => boolean;

/**
 * The predicate of a validated filter (`config/filter-schema.ts`): a call passes when it
 * matches `allow` (absent: any call) and does not match `drop` (absent: no call).
 *
 * @example
 * const passes = compileFilter({ allow: { type: 'track' }, drop: { field: 'properties.test', equals: true } });
 * passes(trackMessage); // true unless its properties.test is true
 */
export function compileFilter(filter: DestinationFilter): CallPredicate {
  const allow = filter.allow === undefined ? undefined : compileCondition(filter.allow);
  const drop = filter.drop === undefined ? undefined : compileCondition(filter.drop);
  if (allow !== undefined && drop !== undefined) return (m) => allow(m) && !drop(m);
  if (allow !== undefined) return allow;
  if (drop !== undefined) return (m) => !drop(m);
  return () => true;
}

/** The predicate of one condition: true when the call matches it. */
export function compileCondition(condition: FilterCondition): CallPredicate {
  if ('all' in condition) {
    const parts = condition.all.map(compileCondition);
    if (parts.length === 1) return parts[0]!;
    return (m) => {
      for (const part of parts) if (!part(m)) return false;
      return true;
    };
  }
  if ('any' in condition) {
    const parts = condition.any.map(compileCondition);
    if (parts.length === 1) return parts[0]!;
    return (m) => {
      for (const part of parts) if (part(m)) return true;
      return false;
    };
  }
  if ('not' in condition) {
    const inner = compileCondition(condition.not);
    return (m) => !inner(m);
  }
  if ('type' in condition) {
    const { type } = condition;
    if (typeof type === 'string') return (m) => m.type === type;
    const types = new Set<string>(type);
    return (m) => types.has(m.type);
  }
  if ('event' in condition) return compileEvent(condition.event);
  if ('field' in condition) return compileField(condition);
  throw new TypeError(`compileCondition: not a condition: ${JSON.stringify(Object.keys(condition))}`);
}

/** An event name condition: it matches track calls only, since only they have an `event`. */
function compileEvent(event: string | string[] | { prefix: string | string[] }): CallPredicate {
  if (typeof event === 'string') return (m) => m.type === 'track' && m.event === event;
  if (Array.isArray(event)) {
    const names = new Set(event);
    return (m) => m.type === 'track' && typeof m.event === 'string' && names.has(m.event);
  }
  const prefixes = typeof event.prefix === 'string' ? [event.prefix] : event.prefix;
  return (m) => {
    if (m.type !== 'track' || typeof m.event !== 'string') return false;
    for (const p of prefixes) if (m.event.startsWith(p)) return true;
    return false;
  };
}

type ValueCheck = (value: unknown) => boolean;

function compileField(condition: FieldCondition): CallPredicate {
  const read = fieldReader(condition.field);
  const checks: ValueCheck[] = [];
  if (Object.hasOwn(condition, 'equals')) {
    const expected: FilterScalar | undefined = condition.equals;
    checks.push((v) => v === expected);
  }
  if (condition.in !== undefined) {
    const values = new Set<unknown>(condition.in);
    checks.push((v) => values.has(v));
  }
  if (condition.exists !== undefined) {
    checks.push(condition.exists ? (v) => v !== undefined && v !== null : (v) => v === undefined || v === null);
  }
  const { gt, gte, lt, lte } = condition;
  if (gt !== undefined) checks.push((v) => typeof v === 'number' && v > gt);
  if (gte !== undefined) checks.push((v) => typeof v === 'number' && v >= gte);
  if (lt !== undefined) checks.push((v) => typeof v === 'number' && v < lt);
  if (lte !== undefined) checks.push((v) => typeof v === 'number' && v <= lte);
  if (checks.length === 1) {
    const check = checks[0]!;
    return (m) => check(read(m));
  }
  return (m) => {
    const value = read(m);
    for (const check of checks) if (!check(value)) return false;
    return true;
  };
}

/**
 * Reads a path from a call, key by key, through the objects' own keys only (a path such as
 * `properties.constructor` finds nothing unless the call sent it); a missing key, or a
 * step into something that is not an object (a list included), reads as undefined.
 */
export function fieldReader(path: string): (message: NormalizedMessage) => unknown {
  const segments = fieldPathSegments(path);
  return (message) => {
    let node: unknown = message;
    for (const key of segments) {
      if (node === null || typeof node !== 'object' || Array.isArray(node) || !Object.hasOwn(node, key)) return undefined;
      node = (node as Record<string, unknown>)[key];
    }
    return node;
  };
}
