import { api } from './api.js';
import { readToken } from './token.js';

/** How long an early answer waits to be taken; a page shown later asks again, for data as fresh as a refresh's. */
const keptMs = 10_000;
const early = new Map<string, { atMs: number; answer: Promise<unknown> }>();

/**
 * Sends GETs as the script starts, before anything is rendered: the session check and the
 * first page's own calls go out together, rather than the page's waiting for the session to
 * be checked and for its first render. Nothing is sent without a token.
 */
export function callEarly(paths: readonly string[]): void {
  if (readToken() === null) return;
  for (const path of paths) {
    const answer = api('GET', path);
    // A refusal is handled where the answer is taken; one never taken must not be reported as unhandled.
    answer.catch(() => undefined);
    early.set(path, { atMs: performance.now(), answer });
  }
}

/** The answer of an early call to `path`, once; undefined when none was sent, or it is too old to show. */
export function takeEarly<T>(path: string): Promise<T> | undefined {
  const found = early.get(path);
  early.delete(path);
  return found !== undefined && performance.now() - found.atMs < keptMs ? (found.answer as Promise<T>) : undefined;
}
