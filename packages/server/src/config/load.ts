/**
 * Loading the configuration file: read, parse (YAML or JSON by extension), expand
 * `${VAR}` references from the environment, validate, apply environment overrides. Every
 * failure is a {@link ConfigError} that names the file, the path inside it and the rule,
 * because it stops start-up and the operator has nothing else to go on.
 */
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { isScalar, LineCounter, parseDocument } from 'yaml';
import { formatIssue, formatPath, validateConfig, type ConfigIssue } from './schema.js';
import { describeYamlError, unresolvedAliases } from './yaml-errors.js';
import type { FerryConfig } from './model.js';

/** A configuration that cannot be used: the message names the file, the path in it and the rule. */
export class ConfigError extends Error {
  /** The file (as given to the loader) or the label given to {@link configFromObject}. */
  readonly file: string;
  /** Every broken rule; the message lists them all, one per line. */
  readonly issues: readonly ConfigIssue[];
  constructor(file: string, issues: readonly ConfigIssue[]) {
    super(issues.map((issue) => `${file}: ${formatIssue(issue)}`).join('\n'));
    this.name = 'ConfigError';
    this.file = file;
    this.issues = issues;
  }

  /** Path of the first broken rule, e.g. `destinations[0].settings.webhooks`; empty for the file as a whole. */
  get path(): string {
    return this.issues[0]?.path ?? '';
  }
}

/** Options of {@link configFromObject}. */
export interface ConfigFromObjectOptions {
  /**
   * Expand `${VAR}` references in string values from this environment. Leave it out for
   * input from the admin API: an API caller must not be able to read the server's
   * environment (a header value of `${FERRY_ADMIN_TOKEN}` sent to its own URL).
   */
  env?: NodeJS.ProcessEnv;
}

/**
 * Validates an already-parsed configuration object (for tests and the admin API).
 *
 * @param obj The parsed file content.
 * @param label Names the origin in error messages, like a file name.
 * @returns The configuration with every default applied and `webhookUrl` folded into `webhooks`.
 * @throws ConfigError naming `label`, the path and the rule.
 * @example
 * const config = configFromObject({ sources: [{ id: 'app', writeKey: 'k' }] }, 'test');
 */
export function configFromObject(obj: unknown, label = 'config', options: ConfigFromObjectOptions = {}): FerryConfig {
  const input = options.env === undefined ? obj : expandEnvironment(obj, options.env, label);
  const result = validateConfig(input);
  if (!result.ok) throw new ConfigError(label, result.issues);
  return result.value;
}

/**
 * Loads the configuration file: `.yaml`/`.yml` (YAML 1.2) or `.json`, `${VAR}` and
 * `${VAR:-default}` expanded from `env` in string values, validated, and
 * {@link applyEnvironment} applied.
 *
 * @param path The file, as the operator gave it (it is repeated in error messages).
 * @param env Source of `${VAR}` values and of `FERRY_ALLOW_PRIVATE_NETWORKS`.
 * @throws ConfigError for a missing or unreadable file, an unknown extension, a syntax
 *   error (with line and column), an empty file, an unset variable or a broken rule.
 * @example
 * const config = loadConfigFile('ferry.config.yaml', { BACKEND_WRITE_KEY: 'wk-1' });
 */
export function loadConfigFile(path: string, env: NodeJS.ProcessEnv): FerryConfig {
  const ext = extname(path).toLowerCase();
  if (ext !== '.yaml' && ext !== '.yml' && ext !== '.json') {
    throw new ConfigError(path, [{ path: '', message: `unsupported file extension ${JSON.stringify(ext)}; use .yaml, .yml or .json` }]);
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(path, [{ path: '', message: describeReadError(err) }]);
  }
  const parsed = ext === '.json' ? parseJson(text, path) : parseYaml(text, path);
  return applyEnvironment(configFromObject(parsed, path, { env }), env);
}

/**
 * Applies the environment variables that override the file: today
 * `FERRY_ALLOW_PRIVATE_NETWORKS` (`1`/`true`/`yes` turn it on, `0`/`false`/`no` off,
 * unset or empty leave the file's value). Returns a new object; idempotent.
 *
 * @throws ConfigError when a variable has a value it does not understand.
 */
export function applyEnvironment(config: FerryConfig, env: NodeJS.ProcessEnv): FerryConfig {
  const raw = env.FERRY_ALLOW_PRIVATE_NETWORKS?.trim().toLowerCase();
  if (raw === undefined || raw === '') return config;
  let allow: boolean;
  if (raw === '1' || raw === 'true' || raw === 'yes') allow = true;
  else if (raw === '0' || raw === 'false' || raw === 'no') allow = false;
  else {
    throw new ConfigError('FERRY_ALLOW_PRIVATE_NETWORKS', [
      { path: '', message: `must be 1, true, yes, 0, false or no (got ${JSON.stringify(env.FERRY_ALLOW_PRIVATE_NETWORKS)})` },
    ]);
  }
  return { ...config, network: { ...config.network, allowPrivateNetworks: allow } };
}

function describeReadError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      return 'file not found (give another with --config or FERRY_CONFIG)';
    case 'EISDIR':
      return 'is a directory, not a file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    default:
      return `cannot read the file: ${err instanceof Error ? err.message : String(err)}`;
  }
}

const emptyFile: ConfigIssue = { path: '', message: 'the file is empty; it must hold a mapping with sources and destinations' };

function parseJson(text: string, file: string): unknown {
  // Editors on Windows save a byte-order mark that JSON.parse refuses.
  const body = text.replace(/^\uFEFF/, '');
  if (body.trim() === '') throw new ConfigError(file, [emptyFile]);
  try {
    return JSON.parse(body) as unknown;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // V8 quotes the text around the error, which may hold a write key: keep only the reason.
    const reason = message.replace(/, ".*" is not valid JSON$/s, '').replace(/ in JSON at position \d+.*$/s, '');
    throw new ConfigError(file, [{ path: '', message: `JSON syntax error${jsonErrorWhere(body, message)}: ${reason}` }]);
  }
}

/**
 * ` at line L, column C` for a JSON syntax error, or '' when it cannot be placed. Some V8
 * versions give the offset in the message; others do not, and then the YAML parser, which
 * reads JSON too, usually finds the same spot.
 */
function jsonErrorWhere(body: string, message: string): string {
  const position = /position (\d+)/.exec(message)?.[1];
  const offset = position !== undefined ? Number(position) : parseDocument(body).errors[0]?.pos[0];
  if (offset === undefined) return '';
  const before = body.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return ` at line ${line}, column ${column}`;
}

function parseYaml(text: string, file: string): unknown {
  const lineCounter = new LineCounter();
  // YAML 1.2 core schema: `yes`/`on` stay strings, so `enabled: yes` is an error, not a surprise.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  // Warnings count too: an unknown tag (`writeKey: !abc`) would otherwise silently become "".
  const problems = [...doc.errors, ...doc.warnings];
  if (problems.length > 0)
    throw new ConfigError(
      file,
      problems.map((error) => describeYamlError(error, lineCounter)),
    );
  if (doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null)) {
    throw new ConfigError(file, [emptyFile]);
  }
  const aliases = unresolvedAliases(doc, lineCounter);
  if (aliases.length > 0) throw new ConfigError(file, aliases);
  try {
    // maxAliasCount bounds alias expansion, so a "billion laughs" file cannot exhaust memory.
    return doc.toJS({ maxAliasCount: 100 }) as unknown;
  } catch {
    // The library's message may quote the file; aliases expanding too far are the one failure left here.
    throw new ConfigError(file, [{ path: '', message: 'YAML error: aliases expand too far (at most 100 are followed)' }]);
  }
}

const referencePattern = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?$/;

/**
 * Expands `${VAR}` and `${VAR:-default}` in every string value of `value` (keys are left
 * alone). Expansion runs after parsing, so a variable's value is always one string and
 * can never add YAML structure. `$${` stands for a literal `${`. `:-` uses the default
 * when the variable is unset or empty, as in the shell.
 *
 * @throws ConfigError listing every unset variable and malformed reference with its path.
 */
export function expandEnvironment(value: unknown, env: NodeJS.ProcessEnv, file: string): unknown {
  const issues: ConfigIssue[] = [];
  const walk = (v: unknown, path: (string | number)[]): unknown => {
    if (typeof v === 'string') return expandString(v, env, path, issues);
    if (Array.isArray(v)) return v.map((item, i) => walk(item, [...path, i]));
    if (v !== null && typeof v === 'object') {
      // fromEntries defines own properties, so a `__proto__` key stays a key (and is
      // refused as unknown) instead of replacing the object's prototype.
      return Object.fromEntries(Object.entries(v).map(([key, item]) => [key, walk(item, [...path, key])]));
    }
    return v;
  };
  const out = walk(value, []);
  if (issues.length > 0) throw new ConfigError(file, issues);
  return out;
}

function expandString(text: string, env: NodeJS.ProcessEnv, path: (string | number)[], issues: ConfigIssue[]): string {
  if (!text.includes('${')) return text;
  let out = '';
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('$${', i)) {
      out += '${';
      i += 3;
      continue;
    }
    if (!text.startsWith('${', i)) {
      out += text[i];
      i += 1;
      continue;
    }
    const end = text.indexOf('}', i + 2);
    if (end < 0) {
      issues.push({ path: formatPath(path), message: 'unterminated ${ reference (write $${ for a literal ${)' });
      return text;
    }
    const inner = text.slice(i + 2, end);
    const match = referencePattern.exec(inner);
    if (match === null) {
      issues.push({
        path: formatPath(path),
        // The text inside may be part of a secret (a write key holding "${"): it is not repeated.
        message: `malformed reference \${…}; use \${NAME} or \${NAME:-default} (write $\${ for a literal \${)`,
      });
      return text;
    }
    const name = match[1] ?? '';
    const fallback = match[2];
    const current = env[name];
    if (fallback !== undefined && (current === undefined || current === '')) {
      out += fallback;
    } else if (current === undefined) {
      issues.push({
        path: formatPath(path),
        message: `environment variable ${name} is not set (set it, or give a default: \${${name}:-value})`,
      });
      return text;
    } else {
      out += current;
    }
    i = end + 1;
  }
  return out;
}
