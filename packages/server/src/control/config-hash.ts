/**
 * Digests of the configuration: of the sources and destinations a configuration names, as the
 * store keeps the last one applied, and of single objects, to tell whether one was edited
 * since. What is digested is the configuration as resolved (`${VAR}` expanded, validated,
 * defaults applied), not the file's text: a secret changed in the environment is a change,
 * a comment or a re-indented file is not.
 */
import { createHash } from 'node:crypto';
import type { DestinationConfig, SourceConfig } from '../config/model.js';

/** The part of a configuration the store holds: sources and destinations, by id. */
export interface DesiredCatalog {
  sources: readonly SourceConfig[];
  destinations: readonly DestinationConfig[];
}

/**
 * JSON with every object's keys sorted and `undefined` members left out, so that two equal
 * values always give the same text (the store's JSON round trip drops `undefined` and may
 * reorder keys).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'null';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => (item === undefined ? null : sortKeys(item)));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const item = (value as Record<string, unknown>)[key];
      if (item !== undefined) out[key] = sortKeys(item);
    }
    return out;
  }
  return value;
}

/** Whether two values are equal as JSON (key order and `undefined` members do not count). */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/** SHA-256 (hex) of one source or destination as configured. */
export function objectDigest(object: SourceConfig | DestinationConfig): string {
  return createHash('sha256').update(canonicalJson(object)).digest('hex');
}

/**
 * SHA-256 (hex) of a configuration's sources and destinations, each list in id order: the
 * order of entries in the file does not count, the order inside an entry (its webhooks) does.
 */
export function catalogHash(desired: DesiredCatalog): string {
  const byId = <T extends { id: string }>(list: readonly T[]) => [...list].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const text = canonicalJson({ version: 1, sources: byId(desired.sources), destinations: byId(desired.destinations) });
  return createHash('sha256').update(text).digest('hex');
}
