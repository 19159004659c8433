/**
 * The JSON bodies Ferry's Webhooks destination sends, one type per call. Field order in the
 * sent JSON follows the order of the members below. Every non-delete body carries
 * `messageId`: delivery is at least once, so receivers deduplicate on it together with the
 * source (see `dedupKey`), since two sources may send the same `messageId`.
 */

/** Free-form JSON object. */
export type JsonObject = { [key: string]: unknown };

/** Members common to every non-delete body. */
export interface BaseBody {
  /** Always 1. */
  version: 1;
  /** Identifier of the user in the sender's database; absent when the call had only an anonymousId. */
  userId?: string;
  /** Present when the call carried one. */
  anonymousId?: string;
  /** Stable across retries and replays of the same call; unique per source, not across sources. */
  messageId: string;
  /** ISO 8601 in UTC with milliseconds, e.g. `2026-01-02T03:04:05.678Z`. */
  timestamp: string;
  /** Device, IP and similar data about the user. */
  context: JsonObject;
}

/** A page view. `properties` usually holds path, referrer, title and url. */
export interface PageBody extends BaseBody {
  type: 'page';
  name?: string;
  category?: string;
  properties: JsonObject & { path?: string; referrer?: string; title?: string; url?: string };
}

/** A mobile screen view. */
export interface ScreenBody extends BaseBody {
  type: 'screen';
  name?: string;
  category?: string;
  properties?: JsonObject;
  context: JsonObject & {
    device?: { model?: string; type?: string; [key: string]: unknown };
    os?: { name?: string; version?: string; [key: string]: unknown };
    app?: { build?: string; name?: string; version?: string; [key: string]: unknown };
  };
}

/** Ties a user to traits; also sent for audience membership changes. */
export interface IdentifyBody extends BaseBody {
  type: 'identify';
  traits: JsonObject;
}

/** An action the user performed. */
export interface TrackBody extends BaseBody {
  type: 'track';
  event: string;
  properties: JsonObject;
}

/** Links a previous identifier to a new user id. Carries no `userId` member: see the spaced keys. */
export interface AliasBody extends Omit<BaseBody, 'userId'> {
  type: 'alias';
  'Previous ID': string;
  'User ID': string;
}

/** Associates a user with a group (company, organisation, account, team). */
export interface GroupBody extends BaseBody {
  type: 'group';
  groupId: string;
  traits: JsonObject;
}

/** A deletion notification: only these three members, no version. */
export interface DeleteBody {
  type: 'delete';
  userId: string;
  timestamp: string;
}

/** Any body the Webhooks destination sends. Switch on `type`. */
export type WebhookBody = PageBody | ScreenBody | IdentifyBody | TrackBody | AliasBody | GroupBody | DeleteBody;

/** The `type` member of a webhook body. */
export type WebhookBodyType = WebhookBody['type'];
