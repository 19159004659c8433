import { AnalyticsError } from '../errors.js';
import type { Plugin, PluginCall, PluginMessage } from './plugin.js';

/** A plugin hook that threw (or returned something other than an object or null). */
export interface PluginFailure {
  plugin: string;
  hook: 'enrich' | 'flush' | 'close';
  error: unknown;
}

/** What the plugins made of one call. */
export type EnrichOutcome = { kind: 'keep'; message: PluginMessage } | { kind: 'drop'; plugin: string };

function isObject(v: unknown): v is PluginMessage {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Runs every plugin's `enrich` in order. A failing plugin is reported through `onFailure`
 * and its step skipped, so the call keeps the message the previous plugin gave.
 */
export function runEnrich(plugins: readonly Plugin[], message: PluginMessage, call: PluginCall, onFailure: (f: PluginFailure) => void): EnrichOutcome {
  let current = message;
  for (const plugin of plugins) {
    if (!plugin.enrich) continue;
    let next: PluginMessage | null;
    try {
      next = plugin.enrich(current, call);
    } catch (error) {
      onFailure({ plugin: plugin.name, hook: 'enrich', error });
      continue;
    }
    if (next === null) return { kind: 'drop', plugin: plugin.name };
    if (!isObject(next)) {
      // Most often a forgotten `return`: losing the call for it would be worse than skipping.
      onFailure({ plugin: plugin.name, hook: 'enrich', error: new TypeError(`enrich returned ${typeof next}, not a message object or null`) });
      continue;
    }
    current = next;
  }
  return { kind: 'keep', message: current };
}

/**
 * Runs one hook of every plugin, one after another in registration order; failures are
 * reported, never thrown (a failing report included).
 */
export async function runHook(plugins: readonly Plugin[], hook: 'flush' | 'close', onFailure: (f: PluginFailure) => void): Promise<void> {
  for (const plugin of plugins) {
    if (!plugin[hook]) continue;
    try {
      await plugin[hook]();
    } catch (error) {
      try {
        onFailure({ plugin: plugin.name, hook, error });
      } catch {
        // Nothing more can be done for it; the other plugins' hooks still run.
      }
    }
  }
}

/** Throws `invalid_plugin` unless `plugin` has a name and only function hooks. */
export function checkPlugin(plugin: unknown): asserts plugin is Plugin {
  if (!isObject(plugin)) throw new AnalyticsError('invalid_plugin', 'A plugin must be an object.');
  const name = plugin['name'];
  if (typeof name !== 'string' || name.length === 0) throw new AnalyticsError('invalid_plugin', 'A plugin needs a non-empty `name`.');
  for (const hook of ['enrich', 'flush', 'close']) {
    const fn = plugin[hook];
    if (fn !== undefined && typeof fn !== 'function') {
      throw new AnalyticsError('invalid_plugin', `The \`${hook}\` hook of plugin '${name}' must be a function.`);
    }
  }
}

/** The bound of a `flush()` or `close()`, as far as plugin hooks are concerned. */
export interface HookBound {
  /** Resolves `fn` after `ms`; returns the canceller. */
  after(fn: () => void, ms: number): () => void;
  /** Milliseconds left, or undefined for no time limit. */
  remainingMs: number | undefined;
  signal: AbortSignal | undefined;
}

/**
 * Resolves once `hooks` settle, or with `false` once the bound runs out first: a hook that
 * never settles must not hold `flush()` or `close()` past the limit the caller gave.
 */
export function settleWithin(hooks: Promise<void>, bound: HookBound): Promise<boolean> {
  const { remainingMs, signal } = bound;
  const ok = () => true;
  if (remainingMs === undefined && signal === undefined) return hooks.then(ok, ok);
  return new Promise((resolve) => {
    let cancelTimer = () => {};
    const finish = (settled: boolean) => {
      cancelTimer();
      signal?.removeEventListener('abort', onAbort);
      resolve(settled);
    };
    const onAbort = () => finish(false);
    if (signal?.aborted || (remainingMs !== undefined && remainingMs <= 0)) return finish(false);
    signal?.addEventListener('abort', onAbort, { once: true });
    if (remainingMs !== undefined) cancelTimer = bound.after(() => finish(false), remainingMs);
    void hooks.then(
      () => finish(true),
      () => finish(true),
    );
  });
}
