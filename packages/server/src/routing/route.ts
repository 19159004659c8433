import type { DestinationConfig } from '../config/model.js';

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

/** The enabled destinations of a source that a call's integrations map lets through. */
export function routeMessage(
  integrations: Record<string, unknown>,
  enabledDestinations: readonly DestinationConfig[],
): DestinationConfig[] {
  return enabledDestinations.filter((d) => integrationAllows(integrations, d));
}
