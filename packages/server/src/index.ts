/**
 * The Ferry server as a library: build one with {@link createFerry}, or run `ferry serve`.
 * @packageDocumentation
 */
export { createFerry, type Ferry, type FerryOptions, type AdminListenerOptions, type ListenOptions, type FerryUrls } from './app.js';
export type { StopOptions } from './lifecycle/lifecycle.js';
export type {
  FerryConfig,
  SourceConfig,
  DestinationConfig,
  DestinationFilter,
  FilterCondition,
  FieldCondition,
  FilterScalar,
  DeliverySettings,
  RetrySettings,
  NetworkSettings,
  AudienceSettings,
} from './config/model.js';
export type { WebhookEntry, WebhooksSettings } from './destinations/webhooks/settings.js';
export type { DestinationType, AttemptContext, AudienceChangeNotice } from './destinations/destination-type.js';
export type { SendGuard } from './delivery/guards.js';
export { loadConfigFile, configFromObject, applyEnvironment, ConfigError } from './config/load.js';
export { errorCodes, FerryError, type ErrorCode, type ErrorBody } from './errors/error-codes.js';
export type { Store } from './store/store.js';
export { SqliteStore } from './store/sqlite/sqlite-store.js';
export { PgStore, type PgStoreOptions } from './store/postgres/pg-store.js';
export { DeliveryWorker, type DeliveryEvents } from './delivery/worker.js';
export { EventBus } from './events/event-bus.js';
export type { FerryMetrics } from './metrics/ferry-metrics.js';
export type { AttemptWindows, AttemptWindowStats, AttemptWindowName } from './metrics/attempt-windows.js';
export type { BacklogReads, DestinationBacklog } from './store/backlog.js';
export type { FerryEvents, FerryEventName, RejectedMessage } from './events/catalogue.js';
export { decideOutcome, isRetryable, retryPolicy } from './delivery/retry-policy.js';
export { systemClock, ManualClock, type Clock } from './util/clock.js';
export { ferryVersion } from './util/version.js';
