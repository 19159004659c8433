/**
 * `@ferry/webhooks`: everything the owner of a receiving endpoint needs: verify `X-Signature`
 * and Standard Webhooks signatures (several secrets during a rotation), the key to
 * deduplicate on, typed bodies for every call type, and the local listener behind `ferry listen`.
 */
export { ROTATION_SIGNATURES_HEADER, signBody, verifySignature, verifySignatureHeaders } from './signature.js';
export {
  DEFAULT_TOLERANCE_SECONDS,
  generateStandardWebhookSecret,
  parseStandardWebhookSecret,
  signStandardWebhook,
  STANDARD_WEBHOOKS_HEADERS,
  STANDARD_WEBHOOKS_SECRET_PREFIX,
  standardWebhookSignatures,
  verifyStandardWebhook,
  type StandardWebhookFailure,
  type StandardWebhookVerdict,
  type StandardWebhookVerifyOptions,
} from './standard-webhooks.js';
export { dedupKey, SOURCE_HEADER, type HeadersLike } from './dedup-key.js';
export {
  createListener,
  DEFAULT_MAX_BODY_BYTES,
  type ListenerOptions,
  type ReceivedWebhook,
  type RejectedWebhook,
  type RejectionCode,
  type SignatureVerdicts,
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
