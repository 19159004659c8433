import { AnalyticsError } from '../errors.js';
import type { Plugin } from './plugin.js';

/** Keys {@link removeKeys} takes out. */
export interface RemoveKeysOptions {
  /** Keys removed from `properties` (and from a page call's `traits`, which are its properties). */
  properties?: readonly string[];
  /** Keys removed from `traits` and from `context.traits`. */
  traits?: readonly string[];
}

function without(value: unknown, keys: ReadonlySet<string>): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  if (!Object.keys(record).some((k) => keys.has(k))) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(record)) if (!keys.has(k)) out[k] = v;
  return out;
}

function checkKeys(list: unknown, what: string): Set<string> {
  if (list === undefined) return new Set();
  if (!Array.isArray(list) || !list.every((k) => typeof k === 'string')) {
    throw new AnalyticsError('invalid_option', `removeKeys: \`${what}\` must be an array of strings.`);
  }
  return new Set(list);
}

/**
 * A plugin that removes the listed top-level keys from `properties` and `traits`, for data
 * that must not leave the process (emails, tokens...). Removed keys never reach the queue,
 * the logs or the network. The caller's objects are not modified.
 *
 * @example
 * analytics.register(removeKeys({ properties: ['password'], traits: ['email', 'phone'] }));
 */
export function removeKeys(options: RemoveKeysOptions): Plugin {
  const props = checkKeys(options.properties, 'properties');
  const traits = checkKeys(options.traits, 'traits');
  return {
    name: 'remove-keys',
    enrich(message, call) {
      let out: Record<string, unknown> | undefined;
      const set = (key: string, value: unknown) => {
        if (value === message[key]) return;
        out ??= { ...message };
        out[key] = value;
      };
      if (message['properties'] !== undefined) set('properties', without(message['properties'], props));
      // A page call's `traits` are the spec's other name for its properties.
      if (message['traits'] !== undefined) set('traits', without(message['traits'], call.type === 'page' ? new Set([...props, ...traits]) : traits));
      const context = message['context'] as Record<string, unknown> | undefined;
      if (context?.['traits'] !== undefined) {
        const t = without(context['traits'], traits);
        if (t !== context['traits']) set('context', { ...context, traits: t });
      }
      return out ?? message;
    },
  };
}
