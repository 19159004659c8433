// How the audience form reads and shows a trait rule's `equals`, which may be any JSON scalar.

/** An `equals` value as typed: a number, true, false or null are read as such, "quoted" text as text, anything else as text. */
export function parseEquals(text: string): unknown {
  const t = text.trim();
  if (t === 'true') return true;
  if (t === 'false') return false;
  if (t === 'null') return null;
  if (t !== '' && /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(t)) return Number(t);
  if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) {
    try {
      return JSON.parse(t) as unknown;
    } catch {
      return t.slice(1, -1);
    }
  }
  return text;
}

/** The inverse of {@link parseEquals}: text that looks like another type is quoted. */
export function showEquals(value: unknown): string {
  if (typeof value === 'string') return parseEquals(value) === value ? value : JSON.stringify(value);
  return JSON.stringify(value);
}
