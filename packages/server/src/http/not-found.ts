import { FerryError } from '../errors/error-codes.js';

/** The `not_found` error of a request no route matches, naming its method and path (never its query). */
export function notFound(method: string, url: string): FerryError {
  return new FerryError('not_found', `no route ${method} ${url.split('?')[0]}`);
}
