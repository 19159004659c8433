import { forgetToken, readToken } from './token.js';

/** One error as the admin API reports it (`{"success":false,"errors":[{code,message,path?}]}`). */
export interface ApiErrorDetail {
  code: string;
  message: string;
  /** The request field it is about, e.g. `settings.webhooks[0].url`. */
  path?: string;
}

/** A refused or failed admin API call: the status and the server's first error. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly path?: string,
  ) {
    super(message);
  }
}

/** Called when the server refuses the token (401), so the app can go back to sign-in. */
let onUnauthorized: () => void = () => undefined;

/** Sets what happens when the token is refused. */
export function whenUnauthorized(handler: () => void): void {
  onUnauthorized = handler;
}

/**
 * The server refused `token` (401): forgets it and goes back to sign-in, unless the tab holds
 * another token by now, as when an old call's answer arrives after the person signed in again.
 */
export function tokenRefused(token: string | null): void {
  if (readToken() !== token) return;
  forgetToken();
  onUnauthorized();
}

/** The admin API's base path on this origin. */
export const apiBase = '/admin/v1';

/** Builds `path?query` from the defined entries of `query`. */
export function withQuery(path: string, query: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(name, String(value));
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** Headers of every admin call: the Bearer token (never a query parameter). */
export function authHeaders(token = readToken()): Record<string, string> {
  return token === null ? {} : { authorization: `Bearer ${token}` };
}

/**
 * Calls the admin API and answers the parsed JSON (undefined for 204), or throws an
 * {@link ApiError} carrying the server's code, message and field path.
 */
export async function api<T>(method: string, path: string, body?: unknown, token?: string): Promise<T> {
  const sent = token ?? readToken();
  const headers: Record<string, string> = authHeaders(sent);
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(apiBase + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'network_error', 'The Ferry server could not be reached.');
  }
  const text = await response.text();
  const json: unknown = text === '' ? undefined : parseJson(text);
  if (!response.ok) {
    const detail = errorDetail(json) ?? { code: `http_${response.status}`, message: `The server answered ${response.status}.` };
    // A call made with a token of its own (sign-in's check, an early call) leaves the tab's token alone.
    if (response.status === 401 && token === undefined) tokenRefused(sent);
    throw new ApiError(response.status, detail.code, detail.message, detail.path);
  }
  return json as T;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The first error of an answer, in the admin API's shape or a bare `{code,message,field?}`. */
export function errorDetail(json: unknown): ApiErrorDetail | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const record = json as { errors?: unknown; code?: unknown; message?: unknown; path?: unknown; field?: unknown };
  const first = Array.isArray(record.errors) ? (record.errors[0] as Record<string, unknown> | undefined) : record;
  if (!first || typeof first['code'] !== 'string') return undefined;
  const path = typeof first['path'] === 'string' ? first['path'] : typeof first['field'] === 'string' ? first['field'] : undefined;
  return { code: first['code'], message: typeof first['message'] === 'string' ? first['message'] : first['code'], ...(path === undefined ? {} : { path }) };
}

/** The message of an error for a person: the server's, or what went wrong locally. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  return error instanceof Error ? error.message : String(error);
}
