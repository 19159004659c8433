/** A JSON object of free-form keys: traits, properties, context. */
export type JsonObject = Record<string, unknown>;

/**
 * Destination names mapped to `true`/`false` (a settings object also counts as enabled, as in
 * Segment). `All: false` disables every destination except those set to `true`. Names are
 * case-sensitive and equal the destination's listed name, e.g. `Webhooks`.
 */
export type Integrations = { All?: boolean } & Record<string, boolean | JsonObject>;

/**
 * Who the call is about: a `userId`, an `anonymousId`, or both.
 * At least one of the two is required.
 */
export type Identity = { userId: string; anonymousId?: string } | { userId?: string; anonymousId: string };

/** Fields every call accepts. */
export interface CommonFields {
  /** Extra context (ip, userAgent, locale...). `library` is filled in by the client. */
  context?: JsonObject;
  /** Routing to destinations; see {@link Integrations}. */
  integrations?: Integrations;
  /**
   * When the event happened, for historical import: a Date or an ISO 8601 string.
   * Omitted: the time of the call.
   */
  timestamp?: Date | string;
  /**
   * Your own idempotency key (at most 100 characters). Omitted: a random UUID.
   * The server ignores a second message with the same id from the same source.
   */
  messageId?: string;
}

/** Ties a user to their traits. */
export type IdentifyMessage = Identity &
  CommonFields & {
    /** Traits of the user (email, name, plan...). */
    traits?: JsonObject;
  };

/** Records an action the user performed. */
export type TrackMessage = Identity &
  CommonFields & {
    /** Event name, e.g. `Order Completed`. Required. */
    event: string;
    /** Free-form event properties. */
    properties?: JsonObject;
  };

/**
 * Properties of a page view: the recognised keys plus any custom ones.
 */
export interface PageProperties extends JsonObject {
  url?: string;
  title?: string;
  referrer?: string;
  path?: string;
}

/** Records a page view (a web page rendered by your server). */
export type PageMessage = Identity &
  CommonFields & {
    /** Name of the page. */
    name?: string;
    /** Category of the page. */
    category?: string;
    /** url, title, referrer, path and custom keys. Sent as `properties`. */
    properties?: PageProperties;
    /**
     * The spec's name for the same object (analytics-go v2 sends `Page.Traits` as
     * `properties`). Merged under `properties`, which wins on a shared key.
     */
    traits?: PageProperties;
  };

/** Records a screen view in a mobile app, reported from your server. */
export type ScreenMessage = Identity &
  CommonFields & {
    /** Name of the screen. */
    name?: string;
    /** Category of the screen. */
    category?: string;
    /** Free-form screen properties. */
    properties?: JsonObject;
  };

/** Associates a user with a group (company, organization, account, project, team). */
export type GroupMessage = Identity &
  CommonFields & {
    /** Identifier of the group. Required. */
    groupId: string;
    /** Group traits, e.g. industry, employee count. */
    traits?: JsonObject;
  };

/**
 * Links one identity to another: `previousId` (often the anonymous id) becomes `userId`.
 */
export type AliasMessage = CommonFields & {
  /** The new identifier. Required. */
  userId: string;
  /** The identifier to alias from. Required. */
  previousId: string;
};

/** The six call types. */
export type CallType = 'identify' | 'track' | 'page' | 'screen' | 'group' | 'alias';

/** Maps each call type to the message object its method takes. */
export interface MessageByType {
  identify: IdentifyMessage;
  track: TrackMessage;
  page: PageMessage;
  screen: ScreenMessage;
  group: GroupMessage;
  alias: AliasMessage;
}
