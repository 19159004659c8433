/**
 * `@ferry/webhooks`: everything the owner of a receiving endpoint needs: verify `X-Signature`,
 * the key to deduplicate on, typed bodies for every call type, and the local listener behind
 * `ferry listen`.
 */
export { signBody, verifySignature } from './signature.js';
export { dedupKey, SOURCE_HEADER, type HeadersLike } from './dedup-key.js';
export {
  createListener,
  DEFAULT_MAX_BODY_BYTES,
  type ListenerOptions,
  type ReceivedWebhook,
  type RejectedWebhook,
  type RejectionCode,
  type WebhookListener,
} from './listener.js';
export { formatEvent, formatRejection } from './format-event.js';
export type {
  AliasBody,
  BaseBody,
  DeleteBody,
  GroupBody,
  IdentifyBody,
  JsonObject,
  PageBody,
  ScreenBody,
  TrackBody,
  WebhookBody,
  WebhookBodyType,
} from './bodies.js';
