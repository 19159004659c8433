/**
 * What a YAML error says, without a word of the file. The `yaml` library's messages quote
 * the text they failed on (a tag, an escape, a token, an alias's name, a source excerpt), and
 * that text may be a write key or a secret, so Ferry describes each error by its code and
 * position instead, and the path where one can be found.
 */
import { isPair, isScalar, isSeq, visit, type Document, type ErrorCode, type LineCounter } from 'yaml';
import type { ConfigIssue } from './schema.js';
import { formatPath } from './schema.js';

const descriptions: Record<ErrorCode, string> = {
  ALIAS_PROPS: 'an alias (*name) cannot carry an anchor or a tag',
  BAD_ALIAS: 'an alias (*name) is malformed; quote a value that begins with *',
  BAD_DIRECTIVE: 'a directive (a line beginning with %) is not understood',
  BAD_DQ_ESCAPE: 'a double-quoted string holds an invalid escape sequence; use single quotes for backslashes',
  BAD_INDENT: 'the indentation is inconsistent',
  BAD_PROP_ORDER: 'an anchor (&) or tag (!) is in the wrong place',
  BAD_SCALAR_START: 'a plain value begins with a reserved character (one of @ ` | > % * & ! ? [ ] { } , #); quote it',
  BLOCK_AS_IMPLICIT_KEY: 'a "key: value" pair where one value was expected; quote a value that holds ": "',
  BLOCK_IN_FLOW: 'a block value is inside a flow collection ([...] or {...})',
  DUPLICATE_KEY: 'a key appears twice in one mapping',
  IMPOSSIBLE: 'the YAML parser failed here',
  KEY_OVER_1024_CHARS: 'an implicit key is longer than 1024 characters',
  MISSING_CHAR: 'a closing quote or bracket, or a separator, is missing',
  MULTILINE_IMPLICIT_KEY: 'an implicit key spans several lines',
  MULTIPLE_ANCHORS: 'a value has more than one anchor (&)',
  MULTIPLE_DOCS: 'the file holds more than one YAML document',
  MULTIPLE_TAGS: 'a value has more than one tag (!)',
  NON_STRING_KEY: 'a key is not a string',
  RESOURCE_EXHAUSTION: 'aliases expand too far',
  TAB_AS_INDENT: 'a tab is used for indentation; indent with spaces',
  TAG_RESOLVE_FAILED: 'a tag (!name) is not one YAML 1.2 knows; quote a value that begins with !',
  UNEXPECTED_TOKEN: 'unexpected text (a mapping nested in a one-line value, or a stray character); quote values holding ": " or " #"',
  BAD_COLLECTION_TYPE: 'a tag names a collection type that does not fit the value',
};

/** A syntax error of `parseDocument`, described by its code and line and column only. */
export function describeYamlError(error: { code: ErrorCode; pos: [number, number] }, lineCounter: LineCounter): ConfigIssue {
  const { line, col } = lineCounter.linePos(error.pos[0]);
  return { path: '', message: `YAML syntax error at line ${line}, column ${col}: ${descriptions[error.code] ?? 'the file is not valid YAML here'}` };
}

/**
 * Every alias that names no anchor set before it, with the path where it stands: a value
 * such as `writeKey: *k3y` reads as an alias in YAML, and the library's error would print the
 * rest of it.
 */
export function unresolvedAliases(doc: Document, lineCounter: LineCounter): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  visit(doc, {
    Alias(_key, node, ancestors) {
      if (node.resolve(doc) !== undefined) return;
      const { line, col } = lineCounter.linePos(node.range?.[0] ?? 0);
      issues.push({
        path: formatPath(pathOf([...ancestors, node])),
        message: `an alias (*…) at line ${line}, column ${col} that no anchor before it defines; quote a value that begins with * (YAML reads it as an alias)`,
      });
    },
  });
  return issues;
}

/** The path to `chain`'s last node, from the chain of its ancestors as `visit` gives it. */
function pathOf(chain: readonly unknown[]): (string | number)[] {
  const path: (string | number)[] = [];
  chain.forEach((node, i) => {
    const child = chain[i + 1];
    if (isSeq(node)) path.push(node.items.indexOf(child));
    else if (isPair(node) && child === node.value) path.push(isScalar(node.key) ? String(node.key.value) : '?');
  });
  return path;
}
