import type { DestinationConfig } from '../config/model.js';
import type { NormalizedMessage } from '../model/message.js';
import { compileFilter, type CallPredicate } from './filter.js';
import { compileRemoval } from './remove-fields.js';

/**
 * A destination as routing sees it: its configuration with its filter and field removals
 * compiled, built once per catalogue load so that a call pays only for the checks.
 */
export interface RouteTarget {
  destination: DestinationConfig;
  /** Whether a call passes its filter; undefined when it has none (every call passes). */
  passes: CallPredicate | undefined;
  /** The call its body is rendered from, its removed fields gone; undefined when it removes none. */
  strip: ((message: NormalizedMessage) => NormalizedMessage) | undefined;
  /**
   * Targets with the same key share one rendered body: the type alone when nothing is removed,
   * else the type with its removals.
   */
  renderKey: string;
}

/** The route target of a destination (validated: its filter and removals are well formed). */
export function routeTargetOf(destination: DestinationConfig): RouteTarget {
  const removals = destination.removeFields ?? [];
  return {
    destination,
    passes: destination.filter === undefined ? undefined : compileFilter(destination.filter),
    strip: removals.length === 0 ? undefined : compileRemoval(removals),
    // A NUL cannot appear in a type name, so no type's key can equal another's with removals.
    renderKey: removals.length === 0 ? destination.type : `${destination.type}\u0000${[...removals].sort().join('\u0000')}`,
  };
}
