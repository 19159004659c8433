/**
 * Every error Ferry reports to a caller carries one of these stable codes. The HTTP status
 * is the one a request-level failure answers with; message-level codes travel inside a 200
 * answer's `rejected` list (or a 400 on the single-call paths). `docs/errors.md` lists them
 * all, and a test fails when one is missing there.
 */
export const errorCodes = {
  // Request-level refusals of the ingestion API: nothing from the request is stored.
  unauthorized: { status: 401, text: 'Missing or unknown write key.' },
  invalid_json: { status: 400, text: 'The request body is not valid JSON.' },
  invalid_batch: { status: 400, text: 'The request body is not a batch: an object with a `batch` array.' },
  unsupported_content_type: { status: 415, text: 'The request body must be sent as application/json.' },
  unsupported_content_encoding: { status: 415, text: 'Only gzip and identity content encodings are accepted.' },
  invalid_gzip: { status: 400, text: 'The body says Content-Encoding: gzip but is not valid gzip data.' },
  payload_too_large: { status: 413, text: 'The request body is over 500 KB (after decompression).' },
  too_many_messages: { status: 400, text: 'A batch holds at most 2,500 messages.' },
  server_busy: {
    status: 503,
    text: 'Ingestion holds as many request bodies as its memory budget allows; nothing was read. Retry after the Retry-After seconds.',
  },
  store_unavailable: { status: 503, text: 'The store could not commit the request; nothing was accepted. Retry later.' },
  not_found: { status: 404, text: 'No such route or resource.' },
  bad_request: { status: 400, text: 'The request could not be read.' },
  request_timeout: { status: 408, text: 'The request was not received in time.' },
  shutting_down: { status: 503, text: 'The server is stopping and accepts no new requests.' },
  internal_error: { status: 500, text: 'A fault inside Ferry; it is logged. Nothing from the request was acknowledged.' },

  // Message-level rejections: the message is refused, its neighbours in the batch are kept.
  message_too_large: { status: 400, text: 'A message is over 32 KB once serialised.' },
  missing_identity: { status: 400, text: 'A message needs a userId or an anonymousId.' },
  missing_event: { status: 400, text: 'A track call needs an `event` name.' },
  missing_group_id: { status: 400, text: 'A group call needs a `groupId`.' },
  missing_previous_id: { status: 400, text: 'An alias call needs a `previousId`.' },
  invalid_type: { status: 400, text: 'The message `type` is missing or is not one of identify, track, page, screen, group, alias.' },
  invalid_field: { status: 400, text: 'A known field has the wrong type.' },
  unsafe_numeric_id: { status: 400, text: 'A numeric id is not an integer within ±(2^53 − 1), so it cannot be kept exactly as sent; send ids as strings.' },
  invalid_timestamp: { status: 400, text: 'A timestamp is not an ISO 8601 date-time.' },
  invalid_message_id: { status: 400, text: 'A messageId must be a non-empty string of at most 100 characters.' },
  too_deeply_nested: { status: 400, text: 'The JSON is nested deeper than the limit.' },
  invalid_message: { status: 400, text: 'A message must be a JSON object.' },

  // Admin API.
  admin_unauthorized: { status: 401, text: 'The admin API needs `Authorization: Bearer <FERRY_ADMIN_TOKEN>`.' },
  admin_forbidden: { status: 403, text: 'The token is valid but its scope does not allow this request: a `read` token may only read.' },
  unknown_parameter: { status: 400, text: 'A query parameter or body key the route does not define; the message names each one.' },
  invalid_settings: { status: 400, text: 'The submitted configuration breaks a rule; the message names it.' },
  conflict: { status: 409, text: 'A resource with that id already exists, or its state does not allow the change.' },
  delivery_not_finished: {
    status: 409,
    text: 'The delivery is still pending (waiting, retrying or being sent); only a finished one, delivered or dead, can be replayed.',
  },
  destination_disabled: {
    status: 409,
    text: 'An archive replay (or a backfill) was asked for a disabled destination, or one of a type this server does not know, which would send nothing; enable it first.',
  },
  too_many_tail_clients: {
    status: 429,
    text: 'As many event streams (`GET /admin/v1/tail`, `GET /admin/v1/sources/{id}/live`) are open as the server allows; close one and retry.',
  },
} as const satisfies Record<string, { status: number; text: string }>;

/** A stable error code from {@link errorCodes}. */
export type ErrorCode = keyof typeof errorCodes;

/** The JSON shape of every error answer: `{"success":false,"errors":[{code,message}]}`. */
export interface ErrorBody {
  success: false;
  errors: { code: ErrorCode; message: string; path?: string }[];
}

/** An error that maps to an HTTP answer with a stable code. Thrown for refusals of a whole request. */
export class FerryError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly path: string | undefined;
  constructor(code: ErrorCode, message?: string, path?: string) {
    super(message ?? errorCodes[code].text);
    this.name = 'FerryError';
    this.code = code;
    this.status = errorCodes[code].status;
    this.path = path;
  }

  toBody(): ErrorBody {
    const error: ErrorBody['errors'][number] = { code: this.code, message: this.message };
    if (this.path !== undefined) error.path = this.path;
    return { success: false, errors: [error] };
  }
}
