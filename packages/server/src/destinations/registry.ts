import type { AnyDestinationType, DestinationType } from './destination-type.js';
import { webhooksDestinationType } from './webhooks/webhooks-destination.js';

/** The destination types Ferry ships: one line per type. */
const builtInTypes: readonly AnyDestinationType[] = [webhooksDestinationType];

/** The destination types a server knows, by their `type` name. */
export interface DestinationRegistry {
  /** The type of that name, if known. */
  get(type: string): DestinationType | undefined;
  /** Every known type's name, in registration order. */
  names(): string[];
}

/**
 * A registry of the built-in types and `extra` ones (a type of an embedding application, or of
 * a test).
 *
 * @throws Error when two types share a name: one would silently hide the other.
 */
export function createDestinationRegistry(extra: readonly AnyDestinationType[] = []): DestinationRegistry {
  const byName = new Map<string, DestinationType>();
  for (const type of [...builtInTypes, ...extra]) {
    if (byName.has(type.type)) throw new Error(`two destination types are named ${JSON.stringify(type.type)}`);
    byName.set(type.type, type);
  }
  const names = [...byName.keys()];
  return { get: (type) => byName.get(type), names: () => [...names] };
}

/** The built-in types alone: what the config file is checked against when nothing else is said. */
export const builtInDestinationTypes: DestinationRegistry = createDestinationRegistry();
