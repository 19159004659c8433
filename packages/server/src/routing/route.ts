import type { DestinationConfig } from '../config/model.js';
import type { DestinationRegistry } from '../destinations/registry.js';
import type { NormalizedMessage } from '../model/message.js';

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
 * `integrations` map lets through. Each body is rendered by the destination's type, once per
 * type however many destinations of that type there are.
 *
 * @param enabledDestinations The source's enabled destinations, each of a type `types` knows
 *   (see {@link Catalog.enabledDestinationsOf}).
 */
export function routeMessage(message: NormalizedMessage, enabledDestinations: readonly DestinationConfig[], types: DestinationRegistry): RoutedDelivery[] {
  const out: RoutedDelivery[] = [];
  // Nearly always a single type: its body is kept in two locals, and only a second type
  // needs a map.
  let firstType: string | undefined;
  let firstBody = '';
  let others: Map<string, string> | undefined;
  for (const d of enabledDestinations) {
    if (!integrationAllows(message.integrations, d)) continue;
    let body: string | undefined;
    if (firstType === undefined) {
      firstType = d.type;
      body = firstBody = types.get(d.type)!.renderMessage(message);
    } else if (d.type === firstType) {
      body = firstBody;
    } else {
      body = (others ??= new Map<string, string>()).get(d.type);
      if (body === undefined) others.set(d.type, (body = types.get(d.type)!.renderMessage(message)));
    }
    out.push({ destinationId: d.id, kind: 'event', body });
  }
  return out;
}
