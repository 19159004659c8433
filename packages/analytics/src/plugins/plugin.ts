import type { CallType, JsonObject } from '../messages.js';

/**
 * A call as plugins see it: the fields the caller passed (`userId`, `event`, `properties`,
 * `traits`, `context`...), before validation and before the client stamps `type`,
 * `messageId`, `timestamp` and `context.library`.
 */
export type PluginMessage = Readonly<Record<string, unknown>>;

/** What a plugin learns about the call besides its fields. */
export interface PluginCall {
  /** The method that was called: `track`, `identify`... */
  type: CallType;
}

/**
 * Enriches or filters calls before they are validated and queued, and takes part in
 * `flush()` and `close()`. Register with {@link Analytics.register}; plugins run in
 * registration order, each on the previous one's result.
 *
 * A hook that throws is reported (the `pluginError` event and the logger) and skipped: the
 * call goes on with the message as it was before that plugin.
 *
 * @example
 * analytics.register({
 *   name: 'tenant',
 *   enrich: (m) => ({ ...m, properties: { ...(m['properties'] as object), tenant: 'acme' } }),
 * });
 */
export interface Plugin {
  /** Names the plugin in drop reasons, reports and logs. */
  readonly name: string;
  /**
   * Returns the message to send on: the same object, or a new one (never mutate `message`,
   * which may be the caller's own object). Returns `null` to drop the call: it is counted in
   * `stats.dropped` and reported through the `drop` event with code `dropped_by_plugin`.
   * Runs synchronously inside the call.
   */
  enrich?(message: PluginMessage, call: PluginCall): PluginMessage | null;
  /** Runs at the start of every `flush()`, before the queue is sent: calls made here go with that flush. */
  flush?(): void | Promise<void>;
  /** Runs once, at the start of `close()`, while calls are still accepted: what it sends goes before the client closes. */
  close?(): void | Promise<void>;
}

/** Context fields a plugin may add; see {@link addContext}. */
export type ContextFields = JsonObject;
