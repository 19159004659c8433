import { ApiError, describeError } from '../lib/api.js';

/** A form's error split by field: the one whose path the server named, or the form's own. */
export interface FormErrors {
  fields: Record<string, string>;
  form?: string;
}

/**
 * Puts a server error at the field it names: `fields` lists the form's field paths (e.g.
 * `settings.webhooks`), and the error goes to the longest one its `path` starts with.
 */
export function placeError(error: unknown, fields: readonly string[]): FormErrors {
  if (error instanceof ApiError && error.path !== undefined) {
    const path = error.path;
    const match = [...fields].sort((a, b) => b.length - a.length).find((f) => path === f || path.startsWith(`${f}.`) || path.startsWith(`${f}[`));
    if (match !== undefined) return { fields: { [match]: error.message } };
  }
  return { fields: {}, form: describeError(error) };
}
