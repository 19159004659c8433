import type { AudienceKind, AudienceRule } from './records.js';

/** The route segment of each kind (`#/audiences/computed-trait/{id}`) and its admin collection. */
export const kinds = {
  audience: { segment: 'audience', api: '/audiences', noun: 'audience', listKey: 'audiences' },
  computed_trait: { segment: 'computed-trait', api: '/computed-traits', noun: 'computed trait', listKey: 'computedTraits' },
} as const satisfies Record<AudienceKind, { segment: string; api: string; noun: string; listKey: string }>;

/** The kind a route segment names, or undefined. */
export function kindOfSegment(segment: string | undefined): AudienceKind | undefined {
  return segment === 'audience' ? 'audience' : segment === 'computed-trait' ? 'computed_trait' : undefined;
}

/** The admin path of one audience or computed trait. */
export function audiencePath(kind: AudienceKind, id: string): string {
  return `${kinds[kind].api}/${encodeURIComponent(id)}`;
}

/** A rule in words, as a list shows it. */
export function describeRule(rule: AudienceRule): string {
  const within = 'withinDays' in rule && rule.withinDays !== undefined ? ` in the last ${rule.withinDays} day${rule.withinDays === 1 ? '' : 's'}` : '';
  if (rule.type === 'event') return `at least ${rule.minCount ?? 1} × "${rule.event}"${within}`;
  if (rule.type === 'event_count') return `count of "${rule.event}"${within}`;
  return `trait ${rule.trait} = ${JSON.stringify(rule.equals)}`;
}
