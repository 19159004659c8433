/**
 * Validation of audiences and computed traits as the admin API receives them. Strict like
 * the configuration: an unknown key is an error, because a misspelt `withinDays` would
 * otherwise silently widen an audience to all time.
 */
import { z } from 'zod';
import { configLimits, formatIssue, validateWith, type ConfigIssue } from '../config/schema.js';
import type { DestinationConfig } from '../config/model.js';
import { FerryError } from '../errors/error-codes.js';
import type { AudienceDefinition, AudienceKind } from '../model/audience.js';
import { snakeCase } from './snake-case.js';
import type { DestinationRegistry } from '../destinations/registry.js';

/** Bounds of the rules; sanity limits, not product limits. */
export const audienceLimits = Object.freeze({
  /** Ten years: a longer window is "all time", which leaving `withinDays` out already says. */
  maxWithinDays: 3650,
  maxMinCount: 1_000_000,
  maxEventNameLength: 200,
  maxTraitNameLength: 200,
  maxTraitStringLength: 1000,
  maxDestinations: 100,
});

const idPattern = /^[a-z0-9_-]+$/;

function strict<T extends z.core.$ZodLooseShape>(shape: T) {
  const allowed = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (iss) => (iss.code === 'unrecognized_keys' ? `unknown key; allowed keys here: ${allowed}` : undefined),
  });
}

const nonEmpty = (max: number) =>
  z
    .string()
    .min(1, { error: 'must not be empty' })
    .max(max, { error: `at most ${max} characters` });

const idSchema = nonEmpty(configLimits.maxIdLength).regex(idPattern, {
  error: 'must match [a-z0-9_-]+ (lowercase letters, digits, "_" and "-")',
});

const idList = (what: string) =>
  z
    .array(idSchema)
    .min(1, { error: `must name at least one ${what}` })
    .max(audienceLimits.maxDestinations, { error: `at most ${audienceLimits.maxDestinations} ${what}s` })
    .refine((ids) => new Set(ids).size === ids.length, { error: `must not name a ${what} twice` });

const withinDays = z
  .int({ error: 'must be a whole number of days' })
  .min(1, { error: 'must be at least 1' })
  .max(audienceLimits.maxWithinDays, { error: `at most ${audienceLimits.maxWithinDays}` })
  .optional();

const eventName = nonEmpty(audienceLimits.maxEventNameLength);

const eventRule = strict({
  type: z.literal('event'),
  event: eventName,
  minCount: z
    .int({ error: 'must be a whole number' })
    .min(1, { error: 'must be at least 1' })
    .max(audienceLimits.maxMinCount, { error: `at most ${audienceLimits.maxMinCount}` })
    .default(1),
  withinDays,
});

const traitRule = strict({
  type: z.literal('trait'),
  trait: nonEmpty(audienceLimits.maxTraitNameLength),
  equals: z.union([z.string().max(audienceLimits.maxTraitStringLength), z.number(), z.boolean(), z.null()], {
    error: (iss) => (iss.input === undefined ? 'is required' : 'must be a string, number, boolean or null'),
  }),
});

const eventCountRule = strict({
  type: z.literal('event_count'),
  event: eventName,
  withinDays,
});

function ruleSchema(kind: AudienceKind) {
  const types = kind === 'audience' ? '"event" or "trait"' : '"event_count"';
  const unknownType = (iss: { code: string; input?: unknown }) => (iss.code === 'invalid_union' ? `must be ${types}` : undefined);
  return kind === 'audience'
    ? z.discriminatedUnion('type', [eventRule, traitRule], { error: unknownType })
    : z.discriminatedUnion('type', [eventCountRule], { error: unknownType });
}

function definitionSchema(kind: AudienceKind) {
  return strict({
    id: idSchema,
    name: nonEmpty(configLimits.maxNameLength).refine((name) => snakeCase(name) !== '', {
      error: 'must contain a letter or digit: its snake_case form is the trait key sent',
    }),
    destinationIds: idList('destination'),
    sourceIds: idList('source').optional(),
    rule: ruleSchema(kind),
  });
}

function invalid(issues: readonly ConfigIssue[]): FerryError {
  const first = issues[0];
  return new FerryError('invalid_settings', issues.map(formatIssue).join('; '), first?.path === '' ? undefined : first?.path);
}

/**
 * Validates an audience or computed trait for the admin API.
 *
 * @param input The request body.
 * @param kind `audience` accepts `event` and `trait` rules; `computed_trait` accepts `event_count`.
 * @param known The catalog's destinations, source ids and destination types; every id named
 *   must exist, and each destination must be of a type that renders audience changes.
 * @returns The definition with defaults applied (`minCount` 1, `sourceIds` null: all sources).
 * @throws FerryError `invalid_settings` (400) naming the path and rule.
 */
export function validateAudience(
  input: unknown,
  kind: AudienceKind,
  known: { destinations: readonly DestinationConfig[]; sourceIds: readonly string[]; types: DestinationRegistry },
): AudienceDefinition {
  const result = validateWith(definitionSchema(kind), input);
  if (!result.ok) throw invalid(result.issues);
  const value = result.value;
  const issues: ConfigIssue[] = [];
  const destinations = new Map(known.destinations.map((d) => [d.id, d]));
  value.destinationIds.forEach((id, i) => {
    const d = destinations.get(id);
    if (!d) issues.push({ path: `destinationIds[${i}]`, message: `unknown destination ${JSON.stringify(id)}` });
    else if (!known.types.get(d.type)?.renderAudienceChange)
      issues.push({ path: `destinationIds[${i}]`, message: `destination ${JSON.stringify(id)} is of type ${d.type}, which takes no audience changes` });
  });
  const sources = new Set(known.sourceIds);
  value.sourceIds?.forEach((id, i) => {
    if (!sources.has(id)) issues.push({ path: `sourceIds[${i}]`, message: `unknown source ${JSON.stringify(id)}` });
  });
  if (issues.length > 0) throw invalid(issues);
  const rule = value.rule;
  return {
    id: value.id,
    kind,
    name: value.name,
    destinationIds: value.destinationIds,
    sourceIds: value.sourceIds ?? null,
    // Optional members are left out rather than stored as undefined, so GET shows what was meant.
    rule:
      rule.type === 'trait'
        ? { type: 'trait', trait: rule.trait, equals: rule.equals }
        : rule.type === 'event'
          ? { type: 'event', event: rule.event, minCount: rule.minCount, ...(rule.withinDays === undefined ? {} : { withinDays: rule.withinDays }) }
          : { type: 'event_count', event: rule.event, ...(rule.withinDays === undefined ? {} : { withinDays: rule.withinDays }) },
  };
}
