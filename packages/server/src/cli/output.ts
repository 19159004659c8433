/** What the admin commands print: tables and fields for people, JSON for scripts. */

/** One column of a {@link table}: its heading and how a row shows in it. */
export interface Column<T> {
  heading: string;
  value: (row: T) => unknown;
  /** Longer cells are cut to this many characters, ending in `…`. */
  maxWidth?: number;
}

/** How a missing value shows in a table or a field list. */
const none = '-';

/** A value as a table cell or field shows it: `-` for null and undefined, JSON for objects. */
export function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return none;
  if (typeof value === 'string') return value;
  return JSON.stringify(value) ?? typeof value;
}

function cut(text: string, maxWidth: number | undefined): string {
  const flat = text.replace(/\s+/g, ' ');
  return maxWidth !== undefined && flat.length > maxWidth ? `${flat.slice(0, maxWidth - 1)}…` : flat;
}

/** Rows as a table aligned on its columns, with a heading line; `emptyText` when there are none. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[], emptyText: string): string {
  if (rows.length === 0) return `${emptyText}\n`;
  const cells = [columns.map((c) => c.heading), ...rows.map((row) => columns.map((c) => cut(cell(c.value(row)), c.maxWidth)))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  return cells.map((line) => line.map((text, i) => (i === line.length - 1 ? text : text.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

/** `name: value` lines, the names aligned. */
export function fields(entries: readonly (readonly [string, unknown])[]): string {
  const width = Math.max(...entries.map(([name]) => name.length)) + 1;
  return entries.map(([name, value]) => `${`${name}:`.padEnd(width)} ${cell(value)}`).join('\n') + '\n';
}

/** Writes to stdout. */
export function print(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** Writes one JSON document to stdout: the API's answer as it came, for scripts. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Writes a line to stderr: progress and notices, which a script reading stdout does not see. */
export function note(text: string): void {
  process.stderr.write(`${text}\n`);
}

/** A progress bar of `done` out of `total`, `width` characters wide: `[#####-----]  50% 5/10`. */
export function progressBar(done: number, total: number, width = 30): string {
  const ratio = total > 0 ? Math.min(1, done / total) : 1;
  const filled = Math.round(ratio * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}% ${done}/${total}`;
}
