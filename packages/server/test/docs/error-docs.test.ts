/**
 * docs/errors.md must list every stable error code (with its HTTP status), every attempt
 * ErrorClass and every DeadReason, and nothing that no longer exists. Adding a code to
 * `errors/error-codes.ts`, or a member to the `ErrorClass` or `DeadReason` union
 * (`model/attempt.ts`) without documenting it fails here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { errorCodes } from '../../src/errors/error-codes.js';

const read = (relative: string) => readFileSync(new URL(relative, import.meta.url), 'utf8');

const docs = read('../../../../docs/errors.md');
const attemptSource = read('../../src/model/attempt.ts');

/**
 * The string members of `export type <name> = 'a' | 'b' ...;` in a source file. Comments are
 * removed first, so a `;` or a quote inside a trailing comment cannot cut the union short.
 */
function unionMembers(source: string, name: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
  const match = new RegExp(`export type ${name}\\s*=([^;]*);`).exec(code);
  assert.ok(match, `export type ${name} not found; update this test if it moved`);
  const members = [...match[1]!.matchAll(/'([^']+)'/g)].map((m) => m[1]!);
  assert.ok(members.length > 0, `no string members found in ${name}`);
  // Anything other than string literals joined by | means the parser above no longer fits.
  assert.match(match[1]!.trim(), /^\|?\s*'[^']+'(\s*\|\s*'[^']+')*$/, `${name} is no longer a plain union of string literals`);
  return members;
}

/**
 * The first cells of the table rows under a `## heading` of docs/errors.md, as written
 * inside backticks (`` `code` ``), each with the rest of its cells.
 */
function tableUnder(heading: string): Map<string, string[]> {
  const start = docs.search(new RegExp(`^## ${heading}\\s*$`, 'm'));
  assert.ok(start >= 0, `docs/errors.md has no "## ${heading}" section`);
  const rest = docs.slice(start).split('\n').slice(1);
  const end = rest.findIndex((line) => line.startsWith('## '));
  const rows = new Map<string, string[]>();
  for (const line of end < 0 ? rest : rest.slice(0, end)) {
    const cells = line.split('|').map((c) => c.trim());
    // A table row is `| a | b |`: empty first and last pieces around the cells.
    if (cells.length < 3 || cells[0] !== '') continue;
    const key = /^`([a-z_]+)`$/.exec(cells[1] ?? '');
    if (key) rows.set(key[1]!, cells.slice(2, -1));
  }
  return rows;
}

function assertSameSet(documented: Iterable<string>, actual: Iterable<string>, what: string): void {
  const doc = new Set(documented);
  const src = new Set(actual);
  const missing = [...src].filter((v) => !doc.has(v));
  const stale = [...doc].filter((v) => !src.has(v));
  assert.deepEqual(missing, [], `${what} missing from docs/errors.md: ${missing.join(', ')}`);
  assert.deepEqual(stale, [], `${what} documented in docs/errors.md but no longer in the code: ${stale.join(', ')}`);
}

describe('docs/errors.md', () => {
  test('documents every error code of errors/error-codes.ts, with its HTTP status', () => {
    const rows = tableUnder('Error codes');
    assertSameSet(rows.keys(), Object.keys(errorCodes), 'error codes');
    for (const [code, { status }] of Object.entries(errorCodes)) {
      const cells = rows.get(code)!;
      assert.equal(cells[0], String(status), `docs/errors.md gives ${code} the status ${cells[0]}; the registry says ${status}`);
      assert.ok(
        cells.slice(1).every((c) => c.length > 0),
        `${code}: every column of its row must be filled in`,
      );
    }
  });

  test('documents every ErrorClass of an attempt (model/attempt.ts)', () => {
    const members = unionMembers(attemptSource, 'ErrorClass');
    // The classes the worker and the retry policy are built around must still be there.
    for (const known of ['dns', 'connect', 'tls', 'timeout', 'http', 'ssrf']) assert.ok(members.includes(known), known);
    assertSameSet(tableUnder('Attempt error classes').keys(), members, 'ErrorClass values');
  });

  test('documents every DeadReason of a dead letter (model/attempt.ts)', () => {
    const members = unionMembers(attemptSource, 'DeadReason');
    for (const known of ['retry_window_exhausted', 'non_retryable_response', 'destination_deleted']) assert.ok(members.includes(known), known);
    assertSameSet(tableUnder('Dead-letter reasons').keys(), members, 'DeadReason values');
  });
});
