import type { DestinationConfig } from '../config/model.js';
import type { DestinationRegistry } from '../destinations/registry.js';
import type { NormalizedMessage } from '../model/message.js';
import type { RouteTarget } from './route-target.js';

/**
 * Whether a call's `integrations` map lets it reach a destination. Keys are destination names
 * (the destination's `type`, e.g. `Webhooks`), matched case-sensitively. A key set to `false`
 * excludes, `true` or an options object includes; absent keys follow `All`, which defaults to true.
 */
export function integrationAllows(integrations: Record<string, unknown>, destination: DestinationConfig): boolean {
  const own = integrations[destination.type];
  if (own !== undefined) return own !== false;
  return integrations['All'] !== false;
}

/** One event's delivery job to one destination. */
export interface RoutedDelivery {
  destinationId: string;
  kind: 'event';
  /** The body its destination's type renders for the call, stored and later sent as is. */
  body: string;
}

/**
 * The delivery jobs of one call: one for each of its source's enabled destinations that its
 * `integrations` map and the destination's filter let through. Each body is rendered by the
 * destination's type, once per type however many destinations of that type there are; a
 * destination that removes fields gets a body of its own (shared with any other of its type
 * removing the same ones).
 *
 * @param targets The source's enabled destinations, each of a type `types` knows
 *   (see {@link Catalog.routesOf}).
 * @param filtered Counts, per destination id, the call when a destination's filter drops it.
 */
export function routeMessage(
  message: NormalizedMessage,
  targets: readonly RouteTarget[],
  types: DestinationRegistry,
  filtered?: Map<string, number>,
): RoutedDelivery[] {
  const out: RoutedDelivery[] = [];
  // Nearly always a single render key: its body is kept in two locals, and only a second one
  // needs a map.
  let firstKey: string | undefined;
  let firstBody = '';
  let others: Map<string, string> | undefined;
  for (const target of targets) {
    const d = target.destination;
    if (!integrationAllows(message.integrations, d)) continue;
    if (target.passes !== undefined && !target.passes(message)) {
      filtered?.set(d.id, (filtered.get(d.id) ?? 0) + 1);
      continue;
    }
    const key = target.renderKey;
    let body: string | undefined;
    if (firstKey === undefined) {
      firstKey = key;
      body = firstBody = render(message, target, types);
    } else if (key === firstKey) {
      body = firstBody;
    } else {
      body = (others ??= new Map<string, string>()).get(key);
      if (body === undefined) others.set(key, (body = render(message, target, types)));
    }
    out.push({ destinationId: d.id, kind: 'event', body });
  }
  return out;
}

function render(message: NormalizedMessage, target: RouteTarget, types: DestinationRegistry): string {
  return types.get(target.destination.type)!.renderMessage(target.strip === undefined ? message : target.strip(message));
}
