/**
 * `@ferry/analytics`: server-side analytics for Node. Calls are validated and queued
 * synchronously and sent in background batches to a Ferry server or any Segment-compatible
 * tracking API (`POST {endpoint}/v1/batch`, Basic auth with the write key).
 *
 * Every public name of the package is exported here and nowhere else, and again, without
 * the Node transports, from the edge entry (edge.ts).
 */
export {
  type AnalyticsEvents,
  type AnalyticsStats,
  type DropEvent,
  type ErrorEvent,
  type FlushEvent,
  type PluginErrorEvent,
  type RetryEvent,
} from './analytics.js';
export { Analytics } from './node-analytics.js';
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
export { type FsyncPolicy, type SpoolOptions, spoolDefaults } from './spool/spool-options.js';
export { createSocketTransport, type SocketTransportOptions } from './transport/http1-socket.js';
export { createFetchTransport, type FetchTransportOptions } from './transport/fetch-transport.js';
export { createNodeHttpTransport, type NodeHttpTransportOptions } from './transport/node-http.js';
export type { Transport, TransportRequest, TransportResponse } from './transport/transport.js';
