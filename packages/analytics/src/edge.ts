/**
 * `@ferry/analytics/edge`: the client for runtimes without Node's built-ins (Cloudflare
 * Workers, Vercel Edge, Deno Deploy, browsers' workers). Requests go through the standard
 * `fetch`, gzip through `CompressionStream` where present; nothing in this entry's import
 * graph loads a `node:` module. The API is the Node entry's, without the Node transports.
 *
 * In a request-scoped runtime, hand the flush to the runtime so it outlives the response:
 *
 * @example
 * import { Analytics } from '@ferry/analytics/edge';
 * const analytics = new Analytics('WRITE_KEY', { endpoint: 'https://ferry.example.com' });
 * export default {
 *   fetch(request, env, ctx) {
 *     analytics.track({ userId: 'u1', event: 'Page Served' });
 *     ctx.waitUntil(analytics.flush());
 *     return new Response('ok');
 *   },
 * };
 */
export {
  Analytics,
  type AnalyticsEvents,
  type AnalyticsStats,
  type DropEvent,
  type ErrorEvent,
  type FlushEvent,
  type PluginErrorEvent,
  type RetryEvent,
} from './analytics.js';
export { type Clock, systemClock, type TimerHandle } from './clock.js';
export { AnalyticsError, type ErrorCode, errorCodes } from './errors.js';
export type { FailedMessage, FlushOptions, FlushResult } from './flush-result.js';
export { libraryInfo } from './library-info.js';
export type { Logger } from './logger.js';
export type {
  AliasMessage,
  CallType,
  CommonFields,
  GroupMessage,
  Identity,
  IdentifyMessage,
  Integrations,
  JsonObject,
  PageMessage,
  PageProperties,
  ScreenMessage,
  TrackMessage,
} from './messages.js';
export { type AnalyticsOptions, defaults, type OverflowPolicy } from './options.js';
export { addContext } from './plugins/add-context.js';
export type { ContextFields, Plugin, PluginCall, PluginMessage } from './plugins/plugin.js';
export { removeKeys, type RemoveKeysOptions } from './plugins/remove-keys.js';
export type { Callback } from './queue.js';
export { classifyStatus, parseRetryAfter, retryDelayMs, type RetrySettings } from './retry-policy.js';
export { createFetchTransport, type FetchTransportOptions } from './transport/fetch-transport.js';
export type { Transport, TransportRequest, TransportResponse } from './transport/transport.js';
