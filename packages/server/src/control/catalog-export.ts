/**
 * The store's catalogue written out as a configuration file: YAML that `ferry config validate`
 * and `ferry config apply` accept, each secret replaced by a `${VAR}` placeholder with a
 * predictable name. Which values are secret is what each object's redacted view says (as in
 * `field-diff.ts`): a string the admin API would not show as it is becomes a placeholder. A
 * source's write key always is one.
 */
import { stringify } from 'yaml';
import { destinationRedactor } from '../config/redact.js';
import type { DestinationConfig, SourceConfig } from '../config/model.js';
import type { DestinationRegistry } from '../destinations/registry.js';
import type { StoredCatalog } from '../store/catalog-store.js';
import { formatPath } from '../config/schema-rules.js';
import { sameJson } from './config-hash.js';

/** One placeholder of an export: the variable to set, and where its value goes. */
export interface ExportVariable {
  /** E.g. `FERRY_SOURCE_APP_WRITE_KEY`. */
  name: string;
  /** The path in the file, e.g. `sources[0].writeKey`. */
  path: string;
}

/** An exported catalogue. */
export interface CatalogExport {
  /** The file's text. */
  yaml: string;
  /** The variables its placeholders name, in the file's order: set each to the stored value before applying it. */
  variables: ExportVariable[];
}

type Segment = string | number;

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The file of `stored`: every source and destination with every field written out, secrets as
 * placeholders, and a literal `${` in any other value written `$${` so that it reads back as
 * it is. Variables are named `FERRY_SOURCE_<ID>_WRITE_KEY` and
 * `FERRY_DESTINATION_<ID>_<PATH>` (`FERRY_DESTINATION_CRM_SHARED_SECRET`,
 * `FERRY_DESTINATION_CRM_WEBHOOKS_0_HEADERS_AUTHORIZATION`), upper-cased, with `_` for any other
 * character; a name already taken gets `_2`, `_3`...
 *
 * @param generatedAt Written in the file's header comment.
 */
export function exportCatalog(stored: StoredCatalog, types: DestinationRegistry, generatedAt: Date): CatalogExport {
  const redactDestination = destinationRedactor(types);
  const variables: ExportVariable[] = [];
  const taken = new Set<string>();
  const placeholder = (stem: string, path: string): string => {
    let name = stem;
    for (let n = 2; taken.has(name); n++) name = `${stem}_${n}`;
    taken.add(name);
    variables.push({ name, path });
    return `\${${name}}`;
  };
  const sources = stored.sources.map((source: SourceConfig, i) => ({
    id: source.id,
    name: escape(source.name),
    writeKey: placeholder(`FERRY_SOURCE_${variablePart(source.id)}_WRITE_KEY`, `sources[${i}].writeKey`),
  }));
  const destinations = stored.destinations.map((destination: DestinationConfig, i) => {
    const view = (redactDestination(destination) as { settings?: unknown }).settings;
    const settings = withPlaceholders(destination.settings, view, [], (path) =>
      placeholder(
        `FERRY_DESTINATION_${variablePart(destination.id)}_${path.map((p) => variablePart(String(p))).join('_')}`,
        formatPath(['destinations', i, 'settings', ...path]),
      ),
    );
    return {
      id: destination.id,
      name: escape(destination.name),
      type: destination.type,
      enabled: destination.enabled,
      sources: [...destination.sources],
      ...(destination.filter === undefined ? {} : { filter: escapeStrings(destination.filter) }),
      ...(destination.removeFields === undefined ? {} : { removeFields: destination.removeFields.map(escape) }),
      settings,
      ...(destination.retryStatuses === undefined ? {} : { retryStatuses: [...destination.retryStatuses] }),
      ...(destination.circuitBreaker === undefined ? {} : { circuitBreaker: { ...destination.circuitBreaker } }),
      ...(destination.rateLimit === undefined ? {} : { rateLimit: { ...destination.rateLimit } }),
      ...(destination.autoDisableAfterMs === undefined ? {} : { autoDisableAfterMs: destination.autoDisableAfterMs }),
    };
  });
  const header = [
    `# Ferry configuration exported from the store at ${generatedAt.toISOString()}.`,
    variables.length === 0 ? '# It holds no secret.' : `# Secrets are \${VAR} placeholders; set these variables to the stored values before applying it:`,
    ...variables.map((v) => `#   ${v.name}  (${v.path})`),
    '',
  ].join('\n');
  return { yaml: header + stringify({ sources, destinations }, { lineWidth: 0 }), variables };
}

/** `settings` with every string its redacted view does not show as it is replaced by a placeholder. */
function withPlaceholders(value: unknown, view: unknown, path: Segment[], placeholder: (path: Segment[]) => string): unknown {
  if (Array.isArray(value)) return value.map((item, i) => withPlaceholders(item, Array.isArray(view) ? view[i] : undefined, [...path, i], placeholder));
  if (isRecord(value))
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [
        key,
        withPlaceholders(item, isRecord(view) && Object.hasOwn(view, key) ? view[key] : undefined, [...path, key], placeholder),
      ]),
    );
  if (typeof value !== 'string') return value;
  return sameJson(value, view) ? escape(value) : placeholder(path);
}

/** Every string inside `value` escaped (a filter may compare with a literal `${`). */
function escapeStrings(value: unknown): unknown {
  if (typeof value === 'string') return escape(value);
  if (Array.isArray(value)) return value.map(escapeStrings);
  if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, escapeStrings(item)]));
  return value;
}

/** A literal `${` as the loader reads it back (`$${`). */
function escape(text: string): string {
  // A function, since `$$` in a replacement string means one `$`.
  return text.replaceAll('${', () => '$${');
}

/** An id or key as part of a variable name: `crm-hooks` → `CRM_HOOKS`, `sharedSecret` → `SHARED_SECRET`. */
function variablePart(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}
