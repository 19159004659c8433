/**
 * The building blocks of configuration validation, shared by the file's own rules
 * (`schema.ts`) and by each destination type's settings schema: how a broken rule is
 * reported (path and message, never the value), strict objects, and rules as refinements.
 */
import { z } from 'zod';

/** One broken rule: where (`destinations[0].settings.webhooks`) and which rule. */
export interface ConfigIssue {
  /** Path inside the validated value, e.g. `destinations[0].settings.webhooks[5]`; empty for the top level. */
  path: string;
  message: string;
}

/**
 * Formats a path as a reader of the file would write it: `a.b[0].c`. Keys made of
 * letters, digits, `_`, `$` and `-` stay bare (`headers.X-Team`); others are quoted
 * (`headers["X Team"]`).
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'symbol') out += `[${String(key)}]`;
    else if (/^[A-Za-z0-9_$-]+$/.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out;
}

/** A value's kind, as a message names it without echoing the value. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : 'a number';
  return typeof value;
}

function describeExpected(expected: string): string {
  switch (expected) {
    case 'object':
    case 'record':
      return 'a mapping (object)';
    case 'array':
      return 'a list';
    case 'int':
      return 'an integer';
    case 'boolean':
      return 'true or false';
    default:
      return `a ${expected}`;
  }
}

/** Messages for the issues that zod raises itself; the rules below raise their own. Values are never echoed. */
export const errorMap: z.core.$ZodErrorMap = (iss) => {
  switch (iss.code) {
    case 'invalid_type':
      if (iss.input === undefined) return 'is required';
      if (iss.expected === 'boolean' && typeof iss.input === 'string') {
        return `must be true or false (got a string; a \${VAR} reference always yields a string)`;
      }
      if (iss.expected === 'number' && typeof iss.input === 'string') {
        return `must be a number (got a string; a \${VAR} reference always yields a string)`;
      }
      return `must be ${describeExpected(iss.expected)} (got ${describeValue(iss.input)})`;
    case 'unrecognized_keys':
      return 'unknown key';
    default:
      return undefined;
  }
};

/** A strict object whose unknown-key message lists the keys that are allowed. */
export function strict<T extends z.core.$ZodLooseShape>(shape: T) {
  const allowed = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (iss) => (iss.code === 'unrecognized_keys' ? `unknown key; allowed keys here: ${allowed}` : undefined),
  });
}

/** Turns a rule (a function returning a message when broken) into a zod refinement. */
export function rule<T>(check: (value: T) => string | undefined) {
  return (value: T, ctx: z.core.$RefinementCtx<T>): void => {
    const message = check(value);
    if (message !== undefined) ctx.addIssue({ code: 'custom', message, input: value });
  };
}

/** Converts zod's issues to {@link ConfigIssue}s, one per unknown key. */
export function toConfigIssues(error: z.core.$ZodError): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const iss of error.issues) {
    if (iss.code === 'unrecognized_keys') {
      for (const key of iss.keys) out.push({ path: formatPath([...iss.path, key]), message: iss.message });
    } else {
      out.push({ path: formatPath(iss.path), message: iss.message });
    }
  }
  return out;
}

/** `path: message`, or the message alone at the top level. */
export function formatIssue(issue: ConfigIssue): string {
  return issue.path === '' ? issue.message : `${issue.path}: ${issue.message}`;
}

/**
 * Cross-checks run with `{ when }` even where a part broke a rule of its own, so that a file
 * breaking several rules reports every one of them; they then see the raw input of the
 * broken parts, hence these guards. This one: whether a payload is a list.
 */
export function isArrayPayload(payload: { value: unknown }): boolean {
  return Array.isArray(payload.value);
}

/** Whether a payload is a mapping (object, not a list). */
export function isObjectPayload(payload: { value: unknown }): boolean {
  return payload.value !== null && typeof payload.value === 'object' && !Array.isArray(payload.value);
}

/** `value[key]` when `value` is an object and that field a string. */
export function stringField(value: unknown, key: string): string | undefined {
  const field = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
  return typeof field === 'string' ? field : undefined;
}

/** `value` when it is a list, else an empty one. */
export function listOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** A number that must be an integer from `min` to `max`, both included. */
export function boundedInt(min: number, max: number) {
  return z
    .number()
    .superRefine(rule((v: number) => (Number.isInteger(v) && v >= min && v <= max ? undefined : `must be an integer from ${min} to ${max} (got ${v})`)));
}

/** A number from `min` to `max`, both included. */
export function boundedNumber(min: number, max: number) {
  return z.number().superRefine(rule((v: number) => (v >= min && v <= max ? undefined : `must be a number from ${min} to ${max} (got ${v})`)));
}
