/**
 * Validation of a destination's `filter` and `removeFields` (docs/configuration.md,
 * "Filters"). A filter is a tree of conditions, each a mapping with exactly one kind of key;
 * a hand-written walk reports each broken rule at the path of its clause
 * (`filter.allow.all[2].gt`) with a message that says what that clause may hold, which a union
 * of zod schemas would blur into "no variant matched".
 */
import { z } from 'zod';
import { checkFieldPath } from '../model/field-path.js';
import { callTypes } from '../model/message.js';
import type { DestinationFilter, FieldCondition, FilterCondition, FilterScalar } from './model.js';
import { describeValue } from './schema-rules.js';

/** Bounds that keep a filter small enough to read and cheap to evaluate on every call. */
export const filterLimits = Object.freeze({
  /** `all`, `any` and `not` nest at most this deep. */
  maxDepth: 8,
  /** Conditions in one filter, counting every `all`, `any` and `not`. */
  maxConditions: 200,
  /** Items of any one list: `all`, `any`, `type`, `event`, `in`, `prefix`. */
  maxListLength: 1000,
  /** Characters of an event name, prefix or compared string. */
  maxStringLength: 1000,
  /** Paths in `removeFields`. */
  maxRemoveFields: 100,
});

type Segment = string | number;

/** One broken rule of a filter: where, relative to the filter, and which rule. */
export interface FilterIssue {
  path: Segment[];
  message: string;
}

const conditionKinds = ['all', 'any', 'not', 'type', 'event', 'field'] as const;
const fieldOperators = ['equals', 'in', 'exists', 'gt', 'gte', 'lt', 'lte'] as const;
const numericOperators = ['gt', 'gte', 'lt', 'lte'] as const;
const knownCallTypes: ReadonlySet<string> = new Set(callTypes);

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const mustBeCondition = `must be a condition: a mapping with one of ${conditionKinds.join(', ')}`;

/** A filter's walk: the issues found so far and how many conditions it has seen. */
class FilterCheck {
  readonly issues: FilterIssue[] = [];
  private conditions = 0;

  report(path: Segment[], message: string): undefined {
    this.issues.push({ path, message });
    return undefined;
  }

  filter(value: unknown): DestinationFilter | undefined {
    if (!isRecord(value)) return this.report([], `must be a mapping with allow, drop or both (got ${describeValue(value)})`);
    const out: DestinationFilter = {};
    for (const key of Object.keys(value)) {
      if (key !== 'allow' && key !== 'drop') this.report([key], 'unknown key; allowed keys here: allow, drop');
    }
    if (value['allow'] === undefined && value['drop'] === undefined) {
      return this.report([], 'give allow (the calls to deliver), drop (the calls to leave out) or both; to deliver every call, leave filter out');
    }
    if (value['allow'] !== undefined) out.allow = this.condition(value['allow'], ['allow'], 1);
    if (value['drop'] !== undefined) out.drop = this.condition(value['drop'], ['drop'], 1);
    if (this.conditions > filterLimits.maxConditions) {
      this.report([], `a filter holds at most ${filterLimits.maxConditions} conditions (got ${this.conditions})`);
    }
    return this.issues.length === 0 ? out : undefined;
  }

  private condition(value: unknown, path: Segment[], depth: number): FilterCondition | undefined {
    this.conditions += 1;
    if (!isRecord(value)) return this.report(path, `${mustBeCondition} (got ${describeValue(value)})`);
    const kinds = conditionKinds.filter((k) => Object.hasOwn(value, k));
    if (kinds.length === 0) {
      const keys = Object.keys(value);
      if (keys.length === 0) return this.report(path, `${mustBeCondition} (got an empty mapping)`);
      for (const key of keys) this.report([...path, key], `unknown key; a condition has one of ${conditionKinds.join(', ')}`);
      return undefined;
    }
    if (kinds.length > 1) {
      return this.report(path, `one condition per mapping, and this one has ${kinds.join(' and ')}: list them under all (or any)`);
    }
    const kind = kinds[0]!;
    const allowed: readonly string[] = kind === 'field' ? ['field', ...fieldOperators] : [kind];
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key))
        this.report([...path, key], `unknown key; allowed keys beside ${kind}: ${allowed.filter((k) => k !== kind).join(', ') || 'none'}`);
    }
    const inner = [...path, kind];
    switch (kind) {
      case 'all':
      case 'any': {
        if (depth > filterLimits.maxDepth) return this.report(path, `all, any and not nest at most ${filterLimits.maxDepth} deep`);
        const list = value[kind];
        if (!Array.isArray(list)) return this.report(inner, `must be a list of conditions (got ${describeValue(list)})`);
        if (list.length === 0) return this.report(inner, 'must list at least one condition');
        if (list.length > filterLimits.maxListLength) return this.report(inner, `at most ${filterLimits.maxListLength} conditions (got ${list.length})`);
        const items = list.map((item, i) => this.condition(item, [...inner, i], depth + 1));
        if (items.some((item) => item === undefined)) return undefined;
        return (kind === 'all' ? { all: items } : { any: items }) as FilterCondition;
      }
      case 'not': {
        if (depth > filterLimits.maxDepth) return this.report(path, `all, any and not nest at most ${filterLimits.maxDepth} deep`);
        const item = this.condition(value['not'], inner, depth + 1);
        return item === undefined ? undefined : { not: item };
      }
      case 'type':
        return this.type(value['type'], inner);
      case 'event':
        return this.event(value['event'], inner);
      case 'field':
        return this.field(value, path);
    }
  }

  private type(value: unknown, path: Segment[]): FilterCondition | undefined {
    const check = (t: unknown, at: Segment[]): string | undefined => {
      if (typeof t !== 'string') return this.report(at, `must be a call type (got ${describeValue(t)})`);
      if (!knownCallTypes.has(t)) return this.report(at, `unknown call type ${JSON.stringify(t.slice(0, 40))}; the types are ${callTypes.join(', ')}`);
      return t;
    };
    if (!Array.isArray(value)) {
      const t = check(value, path);
      return t === undefined ? undefined : { type: t };
    }
    const list = this.list(value, path, 'call types');
    if (list === undefined) return undefined;
    const types = list.map((t, i) => check(t, [...path, i]));
    return types.some((t) => t === undefined) ? undefined : { type: types as string[] };
  }

  private event(value: unknown, path: Segment[]): FilterCondition | undefined {
    if (typeof value === 'string') {
      const name = this.string(value, path, 'an event name');
      return name === undefined ? undefined : { event: name };
    }
    if (Array.isArray(value)) {
      const names = this.strings(value, path, 'event names');
      return names === undefined ? undefined : { event: names };
    }
    if (isRecord(value)) {
      for (const key of Object.keys(value)) if (key !== 'prefix') this.report([...path, key], 'unknown key; allowed keys here: prefix');
      const prefix = value['prefix'];
      if (prefix === undefined) return this.report(path, 'give prefix (a string or a list of them), e.g. { prefix: "Order " }');
      const at = [...path, 'prefix'];
      if (Array.isArray(prefix)) {
        const prefixes = this.strings(prefix, at, 'prefixes');
        return prefixes === undefined ? undefined : { event: { prefix: prefixes } };
      }
      const one = this.string(prefix, at, 'a prefix');
      return one === undefined ? undefined : { event: { prefix: one } };
    }
    return this.report(path, `must be an event name, a list of them, or { prefix } (got ${describeValue(value)})`);
  }

  private field(value: Record<string, unknown>, path: Segment[]): FilterCondition | undefined {
    const at = (key: string) => [...path, key];
    const field = value['field'];
    if (typeof field !== 'string') return this.report(at('field'), `must be a path such as properties.plan (got ${describeValue(field)})`);
    const pathProblem = checkFieldPath(field, 'filter');
    if (pathProblem !== undefined) return this.report(at('field'), pathProblem);
    const out: FieldCondition = { field };
    const before = this.issues.length;
    if (!fieldOperators.some((op) => Object.hasOwn(value, op))) {
      return this.report(path, `give at least one of ${fieldOperators.join(', ')} beside field`);
    }
    if (Object.hasOwn(value, 'equals')) {
      const v = this.scalar(value['equals'], at('equals'));
      if (v !== undefined) out.equals = v;
    }
    if (Object.hasOwn(value, 'in')) {
      const list = this.list(value['in'], at('in'), 'values');
      if (list !== undefined) {
        const values = list.map((v, i) => this.scalar(v, [...at('in'), i]));
        if (values.every((v) => v !== undefined)) out.in = values;
      }
    }
    if (Object.hasOwn(value, 'exists')) {
      const v = value['exists'];
      if (typeof v === 'boolean') out.exists = v;
      else this.report(at('exists'), `must be true or false (got ${describeValue(v)})`);
    }
    for (const op of numericOperators) {
      if (!Object.hasOwn(value, op)) continue;
      const v = value[op];
      if (typeof v === 'number' && Number.isFinite(v)) out[op] = v;
      else if (typeof v === 'string') this.report(at(op), 'must be a number (got a string; a ${VAR} reference always yields a string)');
      else this.report(at(op), `must be a number (got ${describeValue(v)})`);
    }
    return this.issues.length === before ? out : undefined;
  }

  private scalar(value: unknown, path: Segment[]): FilterScalar | undefined {
    if (value === null || typeof value === 'boolean') return value;
    if (typeof value === 'number') return Number.isFinite(value) ? value : this.report(path, 'must be a finite number');
    if (typeof value === 'string') return this.string(value, path, 'a string', true);
    return this.report(path, `must be a string, a number, true, false or null (got ${describeValue(value)}): a field is compared with one value`);
  }

  private string(value: unknown, path: Segment[], what: string, emptyAllowed = false): string | undefined {
    if (typeof value !== 'string') return this.report(path, `must be ${what} (got ${describeValue(value)})`);
    if (value === '' && !emptyAllowed) return this.report(path, 'must not be empty');
    if (value.length > filterLimits.maxStringLength) return this.report(path, `at most ${filterLimits.maxStringLength} characters (got ${value.length})`);
    return value;
  }

  private strings(list: unknown[], path: Segment[], what: string): string[] | undefined {
    if (this.list(list, path, what) === undefined) return undefined;
    const out = list.map((v, i) => this.string(v, [...path, i], 'a string'));
    return out.some((v) => v === undefined) ? undefined : (out as string[]);
  }

  private list(value: unknown, path: Segment[], what: string): unknown[] | undefined {
    if (!Array.isArray(value)) return this.report(path, `must be a list of ${what} (got ${describeValue(value)})`);
    if (value.length === 0) return this.report(path, `must list at least one of the ${what}`);
    if (value.length > filterLimits.maxListLength) return this.report(path, `at most ${filterLimits.maxListLength} ${what} (got ${value.length})`);
    return value as unknown[];
  }
}

/**
 * Checks a destination's `filter` as the file or the admin API gives it.
 *
 * @returns The filter, typed, or every broken rule with its path inside the filter.
 * @example
 * checkFilter({ allow: { all: [{ type: 'track' }, { field: 'properties.total', gt: 'x' }] } }).issues
 * // [{ path: ['allow', 'all', 1, 'gt'], message: 'must be a number (got a string; …)' }]
 */
export function checkFilter(value: unknown): { value?: DestinationFilter; issues: FilterIssue[] } {
  const check = new FilterCheck();
  const filter = check.filter(value);
  return check.issues.length === 0 && filter !== undefined ? { value: filter, issues: [] } : { issues: check.issues };
}

/**
 * Checks a destination's `removeFields`: a list of paths inside `properties`, `traits` or
 * `context`, each once.
 */
export function checkRemoveFields(value: unknown): { value?: string[]; issues: FilterIssue[] } {
  const issues: FilterIssue[] = [];
  if (!Array.isArray(value)) return { issues: [{ path: [], message: `must be a list of paths such as properties.email (got ${describeValue(value)})` }] };
  if (value.length > filterLimits.maxRemoveFields) {
    return { issues: [{ path: [], message: `at most ${filterLimits.maxRemoveFields} paths (got ${value.length})` }] };
  }
  value.forEach((path, i) => {
    if (typeof path !== 'string') issues.push({ path: [i], message: `must be a path such as properties.email (got ${describeValue(path)})` });
    else {
      const problem = checkFieldPath(path, 'remove');
      if (problem !== undefined) issues.push({ path: [i], message: problem });
      else if (value.indexOf(path) !== i) issues.push({ path: [i], message: `${JSON.stringify(path)} is listed twice` });
    }
  });
  return issues.length === 0 ? { value: [...(value as string[])], issues } : { issues };
}

/** A zod schema of a hand-written check: its issues reported at their paths, its value the output. */
function fromCheck<T>(check: (value: unknown) => { value?: T; issues: FilterIssue[] }) {
  return z.unknown().transform((input, ctx): T => {
    const result = check(input);
    for (const issue of result.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path, input: undefined });
    return result.value ?? z.NEVER;
  });
}

/** A destination's `filter`, for the destination schema. Output: {@link DestinationFilter}. */
export const destinationFilterSchema = fromCheck(checkFilter);

/** A destination's `removeFields`, for the destination schema. */
export const removeFieldsSchema = fromCheck(checkRemoveFields);
