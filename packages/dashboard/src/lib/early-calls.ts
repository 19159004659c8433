import { api, ApiError, tokenRefused } from './api.js';
import { readToken } from './token.js';

/** How long an early answer waits to be taken; a page shown later asks again, for data as fresh as a refresh's. */
const keptMs = 10_000;
const early = new Map<string, { atMs: number; token: string; answer: Promise<unknown> }>();

/**
 * Sends GETs as the script starts, before anything is rendered: the session check and the
 * first page's own calls go out together, rather than the page's waiting for the session to
 * be checked and for its first render. Nothing is sent without a token.
 */
export function callEarly(paths: readonly string[]): void {
  const token = readToken();
  if (token === null) return;
  for (const path of paths) {
    // Sent with the token named, so that a refusal never forgets a token by itself: one arriving
    // after the person signed in again must not drop the new token. It counts once taken (below).
    const answer = api('GET', path, undefined, token);
    // A refusal is handled where the answer is taken; one never taken must not be reported as unhandled.
    answer.catch(() => undefined);
    early.set(path, { atMs: performance.now(), token, answer });
  }
}

/**
 * The answer of an early call to `path`, once; undefined when none was sent, it is too old to
 * show, or it was asked with another token than the tab's now (signed out, or in again).
 */
export function takeEarly<T>(path: string): Promise<T> | undefined {
  const found = early.get(path);
  early.delete(path);
  if (found === undefined || performance.now() - found.atMs >= keptMs || found.token !== readToken()) return undefined;
  return found.answer.catch((error: unknown) => {
    if (error instanceof ApiError && error.status === 401) tokenRefused(found.token);
    throw error;
  }) as Promise<T>;
}

/** Drops every early answer not yet taken: the session check failed, the token was refused, or the person signed out. */
export function forgetEarly(): void {
  early.clear();
}
