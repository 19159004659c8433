/**
 * Every error the client reports carries one of these stable codes. Codes shared with the
 * Ferry ingestion API (`missing_identity`, `message_too_large`...) use the server's names so
 * a message refused by the client and one refused by the server read the same. The README
 * lists every code; a test fails when one is missing there.
 */
export const errorCodes = {
  // Misuse: thrown synchronously by the constructor.
  invalid_option: 'An option is unknown or has the wrong type or range.',
  invalid_plugin: 'register() was given something that is not a plugin (no name, or a hook that is not a function).',

  // Refusals of one call: thrown synchronously, nothing is queued.
  missing_identity: 'The call needs a userId or an anonymousId.',
  missing_user_id: 'An alias call needs a `userId`.',
  missing_event: 'A track call needs an `event` name.',
  missing_group_id: 'A group call needs a `groupId`.',
  missing_previous_id: 'An alias call needs a `previousId`.',
  invalid_field: 'A known field has the wrong type.',
  invalid_timestamp: 'The timestamp is not a valid Date or an ISO 8601 date-time the API accepts.',
  invalid_message_id: 'A messageId must be a non-empty string of at most 100 characters.',
  not_serializable: 'The message cannot be serialised to JSON (a cycle, a BigInt, a throwing toJSON).',
  message_too_large: 'The message is over the per-message limit (32 KB) once serialised.',
  queue_full: 'The queue is at its bound and the overflow policy is `reject`.',
  closed: 'The client was closed; it accepts no new calls.',
  spool_locked: 'Another live process (or client) uses the spool directory; each client needs its own.',
  spool_io_failed: 'The spool directory could not be created, read or written (thrown; a failed append refuses the call).',

  // Delivery outcomes: reported through callbacks, events and flush results, never thrown.
  queue_overflow: 'The message was the oldest in a full queue and was dropped to make room (policy `drop-oldest`).',
  rejected_by_server: 'The server refused the batch with a status that is not worth retrying (400 and other 4xx).',
  message_rejected: 'The server accepted the batch but refused this message (its `rejected` list).',
  retries_exhausted: 'Every attempt failed with a retryable error and no retries are left.',
  dropped_by_plugin: "A plugin's `enrich` returned null: the call was dropped on purpose before it was queued.",
  unconfirmed: 'close() ran out of time or was aborted before the server confirmed the message.',
  spool_damaged: 'At start the spool held a torn or corrupt record (a crash mid-write); it was skipped, reported through `error`.',
} as const;

/** A stable error code from {@link errorCodes}. */
export type ErrorCode = keyof typeof errorCodes;

/**
 * The one error class of the library. `code` is stable and safe to branch on; `message` is
 * for humans. Delivery errors also carry the HTTP `status` when there was one.
 *
 * @example
 * try { analytics.track({ event: 'Signed Up' } as never) }
 * catch (e) { if (e instanceof AnalyticsError && e.code === 'missing_identity') ... }
 */
export class AnalyticsError extends Error {
  /** Stable code; see {@link errorCodes}. */
  readonly code: ErrorCode;
  /** HTTP status of the last attempt, for delivery errors that had one. */
  readonly status: number | undefined;

  constructor(code: ErrorCode, message?: string, options?: { status?: number; cause?: unknown }) {
    super(message ?? errorCodes[code], options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AnalyticsError';
    this.code = code;
    this.status = options?.status;
  }
}
