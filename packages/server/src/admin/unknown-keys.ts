import { FerryError } from '../errors/error-codes.js';

/**
 * Refuses the keys of a query string or body that a route does not define, naming each of
 * them: a misspelt filter (`?userId=` on `/deliveries`) must not silently list everything,
 * a misspelt `sourceIds` widen a deletion to every source, nor a misspelt filter replay
 * every dead letter.
 *
 * @param what How the keys are called in the message, e.g. `query parameter`.
 * @throws FerryError `unknown_parameter` (400) whose `path` is the first unknown key.
 */
export function refuseUnknownKeys(input: object, allowed: readonly string[], what: string): void {
  const unknown = Object.keys(input).filter((key) => !allowed.includes(key));
  if (unknown.length === 0) return;
  const names = unknown.map((key) => JSON.stringify(key)).join(', ');
  const accepted = allowed.length === 0 ? 'this route takes none' : `allowed: ${allowed.join(', ')}`;
  throw new FerryError('unknown_parameter', `unknown ${what}${unknown.length > 1 ? 's' : ''} ${names}; ${accepted}`, unknown[0]);
}
