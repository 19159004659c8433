/**
 * Validation of the configuration: the file as a whole, and single sources and
 * destinations as the admin API creates or replaces them at run time. One set of rules
 * serves both, so a destination the API accepts would also be accepted in the file.
 *
 * Every object is strict (an unknown key is an error, because a misspelt optional key
 * would otherwise be silently ignored), and every message names the rule it enforces.
 * Messages never echo a write key, a shared secret or a header value.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { FerryError } from '../errors/error-codes.js';
import { defaultAudienceSettings, defaultDeliverySettings, defaultDestinationEnabled, defaultNetworkSettings, defaultRetrySettings } from './defaults.js';
import { circuitBreakerSchema, retryStatusesSchema } from './delivery-policy-schema.js';
import type { AudienceSettings, DeliverySettings, DestinationConfig, FerryConfig, NetworkSettings, RateLimit, RetrySettings, SourceConfig } from './model.js';
import { builtInDestinationTypes, type DestinationRegistry } from '../destinations/registry.js';
import { destinationFilterSchema, removeFieldsSchema } from './filter-schema.js';
import { retentionSettingsSchema } from './retention-schema.js';
import {
  boundedInt,
  boundedNumber,
  errorMap,
  formatIssue,
  isObjectPayload,
  listOf,
  rule,
  strict,
  stringField,
  toConfigIssues,
  type ConfigIssue,
} from './schema-rules.js';

// Where callers (the file loader, the audiences schema) have always found them.
export { formatIssue, formatPath, toConfigIssues, type ConfigIssue } from './schema-rules.js';

/** Sanity bounds enforced by the schema; each destination type bounds its own settings. */
export const configLimits = Object.freeze({
  maxIdLength: 64,
  maxNameLength: 200,
  maxWriteKeyLength: 256,
  maxAllowedNetworks: 100,
});

// ---------------------------------------------------------------------------------------
// Scalars

const idPattern = /^[a-z0-9_-]+$/;

const idSchema = z.string().superRefine(
  rule((v: string) => {
    if (v === '') return 'must not be empty';
    if (v.length > configLimits.maxIdLength) return `at most ${configLimits.maxIdLength} characters (got ${v.length})`;
    if (!idPattern.test(v)) return `must match [a-z0-9_-]+ (lowercase letters, digits, "_" and "-"); got ${JSON.stringify(v)}`;
    return undefined;
  }),
);

const nameSchema = z.string().superRefine(
  rule((v: string) => {
    if (v.trim() === '') return 'must not be empty (leave the key out to use the id)';
    if (v.length > configLimits.maxNameLength) return `at most ${configLimits.maxNameLength} characters (got ${v.length})`;
    return undefined;
  }),
);

// The write key is the user name of HTTP Basic auth, where a colon ends the user name and
// anything outside visible ASCII is encoded differently by different clients.
const writeKeyPattern = /^[\x21-\x39\x3b-\x7e]+$/;

const writeKeySchema = z.string().superRefine(
  rule((v: string) => {
    if (v === '') return 'must not be empty';
    if (v.length > configLimits.maxWriteKeyLength) return `at most ${configLimits.maxWriteKeyLength} characters`;
    if (!writeKeyPattern.test(v)) {
      return 'may contain only visible ASCII characters other than ":" (it is the user name of HTTP Basic auth)';
    }
    return undefined;
  }),
);

// ---------------------------------------------------------------------------------------
// Sources

/** One source as written in the file or sent to the admin API. Output: {@link SourceConfig}. */
export const sourceSchema = strict({
  id: idSchema,
  name: nameSchema.optional(),
  writeKey: writeKeySchema,
}).transform((s): SourceConfig => ({ id: s.id, name: s.name ?? s.id, writeKey: s.writeKey }));

// ---------------------------------------------------------------------------------------
// Destinations

/**
 * `rateLimit` (docs/delivery.md, "Rate limit"): `burst` defaults to one second's worth, at
 * least 1. Bounds: one attempt a day to 100,000 a second.
 */
const rateLimitSchema = strict({
  perSecond: boundedNumber(1 / 86_400, 100_000),
  burst: boundedInt(1, 100_000).optional(),
}).transform((r): RateLimit => ({ perSecond: r.perSecond, burst: r.burst ?? Math.max(1, Math.ceil(r.perSecond)) }));

/**
 * `autoDisableAfterMs` (docs/delivery.md, "Auto-disable"): 0 turns it off; otherwise at least
 * 5 minutes, so that one node's success, written at most a minute late, always counts.
 */
const autoDisableAfterMsSchema = z
  .number()
  .superRefine(
    rule((v: number) =>
      Number.isInteger(v) && (v === 0 || (v >= 300_000 && v <= 365 * 86_400_000))
        ? undefined
        : `must be 0 (never) or an integer from 300000 (5 minutes) to 31536000000 (365 days) (got ${v})`,
    ),
  );

/**
 * One destination as written in the file or sent to the admin API, without the check that
 * its sources exist (that needs the other sources: see {@link validateDestination}).
 * `sources` is required and may be empty: a destination connected to nothing receives
 * nothing, which lets one be prepared before its sources exist. `settings` are checked by
 * the schema of the destination's type, from the registry.
 */
function destinationSchemaFor(types: DestinationRegistry) {
  const names = types.names();
  return strict({
    id: idSchema,
    type: z
      .string()
      .superRefine(
        rule((v: string) =>
          types.get(v)
            ? undefined
            : `unknown destination type ${JSON.stringify(v)}; ${
                names.length === 1 ? `the only type is ${JSON.stringify(names[0])}` : `the types are ${names.map((n) => JSON.stringify(n)).join(', ')}`
              } (case-sensitive)`,
        ),
      ),
    name: nameSchema.optional(),
    enabled: z.boolean().optional(),
    sources: z.array(z.string()).superRefine((ids, ctx) => {
      ids.forEach((id, index) => {
        if (ids.indexOf(id) !== index) {
          ctx.addIssue({ code: 'custom', message: `source ${JSON.stringify(id)} is listed twice`, path: [index], input: id });
        }
      });
    }),
    filter: destinationFilterSchema.optional(),
    removeFields: removeFieldsSchema.optional(),
    // Checked below by the type's own schema, which needs the type.
    settings: z.unknown(),
    retryStatuses: retryStatusesSchema.optional(),
    circuitBreaker: circuitBreakerSchema.optional(),
    rateLimit: rateLimitSchema.optional(),
    autoDisableAfterMs: autoDisableAfterMsSchema.optional(),
  })
    .superRefine(
      (d, ctx) => {
        const type = typeof d.type === 'string' ? types.get(d.type) : undefined;
        if (!type) return;
        const result = type.settingsSchema.safeParse(d.settings, { error: errorMap });
        if (!result.success) for (const issue of result.error.issues) ctx.addIssue({ ...issue, path: ['settings', ...issue.path] });
      },
      { when: isObjectPayload },
    )
    .transform((d): DestinationConfig => {
      // Parsed again for the type's output (defaults, folded forms); a failure here was
      // reported by the refinement above, and the result is a failure whatever this returns.
      const settings = types.get(d.type)?.settingsSchema.safeParse(d.settings);
      const destination: DestinationConfig = {
        id: d.id,
        type: d.type,
        name: d.name ?? d.id,
        enabled: d.enabled ?? defaultDestinationEnabled,
        sources: [...d.sources],
        settings: settings?.success ? settings.data : z.NEVER,
        ...(d.retryStatuses === undefined ? {} : { retryStatuses: d.retryStatuses }),
        ...(d.circuitBreaker === undefined ? {} : { circuitBreaker: d.circuitBreaker }),
      };
      // Only when given, so that a destination without them is stored (and digested) as before.
      if (d.filter !== undefined) destination.filter = d.filter;
      if (d.removeFields !== undefined && d.removeFields.length > 0) destination.removeFields = d.removeFields;
      if (d.rateLimit !== undefined) destination.rateLimit = d.rateLimit;
      if (d.autoDisableAfterMs !== undefined) destination.autoDisableAfterMs = d.autoDisableAfterMs;
      return destination;
    });
}

// ---------------------------------------------------------------------------------------
// Tuning sections: partial overrides merged over defaults.ts

const day = 86_400_000;

const retryOverridesSchema = strict({
  initialDelayMs: boundedInt(1, 3_600_000).optional(),
  multiplier: boundedNumber(1, 10).optional(),
  maxDelayMs: boundedInt(1, day).optional(),
  jitter: boundedNumber(0, 1).optional(),
  windowMs: boundedInt(1, 7 * day).optional(),
  maxRetryAfterMs: boundedInt(1, day).optional(),
});

function merged<T extends object>(defaults: T, overrides: Partial<T>): T {
  const out = { ...defaults };
  for (const [key, value] of Object.entries(overrides)) {
    if (value !== undefined) (out as Record<string, unknown>)[key] = value;
  }
  return out;
}

/** The `delivery` section: any subset of {@link DeliverySettings}, merged over the defaults. */
export const deliverySettingsSchema = strict({
  timeoutMs: boundedInt(1, 60_000).optional(),
  retry: retryOverridesSchema.optional(),
  concurrency: boundedInt(1, 10_000).optional(),
  perDestinationConcurrency: boundedInt(1, 10_000).optional(),
  claimBatchSize: boundedInt(1, 10_000).optional(),
  leaseMs: boundedInt(1, day).optional(),
  leaseRenewIntervalMs: boundedInt(1, day).optional(),
  pollIntervalMs: boundedInt(1, 60_000).optional(),
})
  .transform((d): DeliverySettings => {
    const { retry, ...rest } = d;
    const settings = merged<Omit<DeliverySettings, 'retry'>>(defaultDeliverySettings, rest);
    // A shorter lease set alone brings its renewals closer: a third of it, as the defaults do.
    if (rest.leaseRenewIntervalMs === undefined)
      settings.leaseRenewIntervalMs = Math.max(1, Math.min(defaultDeliverySettings.leaseRenewIntervalMs, Math.floor(settings.leaseMs / 3)));
    return { ...settings, retry: merged<RetrySettings>(defaultRetrySettings, retry ?? {}) };
  })
  .superRefine((d, ctx) => {
    if (d.retry.maxDelayMs < d.retry.initialDelayMs) {
      ctx.addIssue({
        code: 'custom',
        message: `must be at least retry.initialDelayMs (${d.retry.initialDelayMs}); got ${d.retry.maxDelayMs}`,
        path: ['retry', 'maxDelayMs'],
        input: d.retry.maxDelayMs,
      });
    }
    // A lease that can expire during an attempt lets a second worker send the same event
    // while the first is still busy with it. An attempt takes up to timeoutMs for the answer,
    // up to as long again (1 s at most) to read its first KB, then a commit: leave room for all.
    if (d.leaseMs < 2 * d.timeoutMs + 1000) {
      ctx.addIssue({
        code: 'custom',
        message: `must be at least 2 × timeoutMs + 1000 (${2 * d.timeoutMs + 1000}) so a job is not claimed again mid-attempt; got ${d.leaseMs}`,
        path: ['leaseMs'],
        input: d.leaseMs,
      });
    }
    // Under half the lease: one renewal that fails or comes late still leaves another before the lease runs out.
    if (2 * d.leaseRenewIntervalMs >= d.leaseMs) {
      ctx.addIssue({
        code: 'custom',
        message: `must be less than leaseMs / 2 (${d.leaseMs / 2}) so a live worker's leases are renewed before they run out; got ${d.leaseRenewIntervalMs}`,
        path: ['leaseRenewIntervalMs'],
        input: d.leaseRenewIntervalMs,
      });
    }
  });

/** Why a CIDR range is refused, or undefined. Accepts IPv4 and IPv6: `10.1.2.0/24`, `fd00::/8`. */
export function checkCidr(v: string): string | undefined {
  const slash = v.indexOf('/');
  const address = slash < 0 ? v : v.slice(0, slash);
  const prefix = slash < 0 ? '' : v.slice(slash + 1);
  const family = isIP(address);
  const max = family === 6 ? 128 : 32;
  if (family === 0 || !/^\d{1,3}$/.test(prefix) || Number(prefix) > max) {
    return `must be a CIDR range such as 10.1.2.0/24 or fd00::/8 (a single address is /32 or /128); got ${JSON.stringify(v)}`;
  }
  return undefined;
}

/** The `network` section: any subset of {@link NetworkSettings}, merged over the defaults. */
export const networkSettingsSchema = strict({
  allowPrivateNetworks: z.boolean().optional(),
  allowedNetworks: z
    .array(z.string().superRefine(rule(checkCidr)))
    .superRefine(
      rule((list: string[]) =>
        list.length > configLimits.maxAllowedNetworks ? `at most ${configLimits.maxAllowedNetworks} ranges (got ${list.length})` : undefined,
      ),
    )
    .optional(),
}).transform((n): NetworkSettings => ({
  allowPrivateNetworks: n.allowPrivateNetworks ?? defaultNetworkSettings.allowPrivateNetworks,
  allowedNetworks: [...(n.allowedNetworks ?? defaultNetworkSettings.allowedNetworks)],
}));

/** The `audiences` section: any subset of {@link AudienceSettings}, merged over the defaults. */
export const audienceSettingsSchema = strict({
  syncIntervalMs: boundedInt(1, day).optional(),
}).transform((a): AudienceSettings => merged<AudienceSettings>(defaultAudienceSettings, a));

// ---------------------------------------------------------------------------------------
// The whole file

/** Reports each item whose key (when it has one) an earlier item already has. */
function findDuplicates<T>(items: readonly T[], key: (item: T) => string | undefined, report: (index: number, firstIndex: number) => void): void {
  const seen = new Map<string, number>();
  items.forEach((item, index) => {
    const k = key(item);
    if (k === undefined) return;
    const first = seen.get(k);
    if (first === undefined) seen.set(k, index);
    else report(index, first);
  });
}

/**
 * The whole configuration file (after `${VAR}` expansion). `sources` and `destinations`
 * default to empty lists; the tuning sections default to `defaults.ts`. Cross-checks: ids
 * unique, write keys unique, every destination's sources exist. Output: {@link FerryConfig}.
 */
function ferryConfigSchemaFor(destinationSchema: ReturnType<typeof destinationSchemaFor>) {
  return strict({
    sources: z.array(sourceSchema).optional(),
    destinations: z.array(destinationSchema).optional(),
    delivery: deliverySettingsSchema.optional(),
    network: networkSettingsSchema.optional(),
    audiences: audienceSettingsSchema.optional(),
    retention: retentionSettingsSchema.optional(),
  })
    .superRefine(
      (c, ctx) => {
        const sources = listOf(c.sources);
        const destinations = listOf(c.destinations);
        findDuplicates(
          sources,
          (s) => stringField(s, 'id'),
          (i, first) =>
            ctx.addIssue({
              code: 'custom',
              message: `duplicate source id ${JSON.stringify(stringField(sources[i], 'id'))} (also sources[${first}])`,
              path: ['sources', i, 'id'],
              input: undefined,
            }),
        );
        findDuplicates(
          sources,
          (s) => stringField(s, 'writeKey'),
          (i, first) =>
            ctx.addIssue({
              code: 'custom',
              message: `the same write key as sources[${first}]; write keys must be unique, since the key identifies the source`,
              path: ['sources', i, 'writeKey'],
              input: undefined,
            }),
        );
        findDuplicates(
          destinations,
          (d) => stringField(d, 'id'),
          (i, first) =>
            ctx.addIssue({
              code: 'custom',
              message: `duplicate destination id ${JSON.stringify(stringField(destinations[i], 'id'))} (also destinations[${first}])`,
              path: ['destinations', i, 'id'],
              input: undefined,
            }),
        );
        const sourceIds = new Set(sources.map((s) => stringField(s, 'id')).filter((id): id is string => id !== undefined));
        destinations.forEach((d, i) => {
          const connected = d !== null && typeof d === 'object' ? (d as { sources?: unknown }).sources : undefined;
          listOf(connected).forEach((id, j) => {
            if (typeof id === 'string' && !sourceIds.has(id)) {
              ctx.addIssue({
                code: 'custom',
                message: unknownSourceMessage(id, sourceIds),
                path: ['destinations', i, 'sources', j],
                input: id,
              });
            }
          });
        });
      },
      { when: isObjectPayload },
    )
    .transform((c): FerryConfig => ({
      sources: c.sources ?? [],
      destinations: c.destinations ?? [],
      delivery: c.delivery ?? deliverySettingsSchema.parse({}),
      network: c.network ?? networkSettingsSchema.parse({}),
      audiences: c.audiences ?? audienceSettingsSchema.parse({}),
      // Absent, the store's retention stands (set through the admin API, or the defaults).
      ...(c.retention === undefined ? {} : { retention: c.retention }),
    }));
}

/** The schemas of one registry, built once: zod schemas are costly to build and cheap to reuse. */
const schemasByRegistry = new WeakMap<
  DestinationRegistry,
  { destination: ReturnType<typeof destinationSchemaFor>; config: ReturnType<typeof ferryConfigSchemaFor> }
>();

function schemasFor(types: DestinationRegistry) {
  let schemas = schemasByRegistry.get(types);
  if (!schemas) {
    const destination = destinationSchemaFor(types);
    schemas = { destination, config: ferryConfigSchemaFor(destination) };
    schemasByRegistry.set(types, schemas);
  }
  return schemas;
}

function unknownSourceMessage(id: string, known: ReadonlySet<string>): string {
  const list = [...known].map((s) => JSON.stringify(s)).join(', ');
  return `unknown source ${JSON.stringify(id)} (${known.size === 0 ? 'no sources are defined' : `known sources: ${list}`})`;
}

// ---------------------------------------------------------------------------------------
// Entry points

/** The outcome of a validation: the model, or every broken rule. */
export type ValidationResult<T> = { ok: true; value: T } | { ok: false; issues: ConfigIssue[] };

/** Validates `input` with `schema`, collecting every broken rule with its path. */
export function validateWith<S extends z.ZodType>(schema: S, input: unknown): ValidationResult<z.output<S>> {
  const result = schema.safeParse(input, { error: errorMap });
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, issues: toConfigIssues(result.error) };
}

/**
 * Validates a whole configuration object (already `${VAR}`-expanded).
 *
 * @param types The destination types a destination may have; default the built-in ones.
 */
export function validateConfig(input: unknown, types: DestinationRegistry = builtInDestinationTypes): ValidationResult<FerryConfig> {
  return validateWith(schemasFor(types).config, input);
}

function invalid(issues: readonly ConfigIssue[]): FerryError {
  const first = issues[0] ?? { path: '', message: 'invalid' };
  return new FerryError('invalid_settings', issues.map(formatIssue).join('; '), first.path === '' ? undefined : first.path);
}

/**
 * Validates one source for the admin API.
 *
 * @param input The request body.
 * @param otherSources The sources it must not clash with; when replacing a source, leave
 *   the replaced one out.
 * @returns The source with defaults applied (`name` defaults to the id).
 * @throws FerryError `invalid_settings` (400) naming the path and rule, or `conflict` (409)
 *   when the id or write key is already used by another source.
 * @example
 * const source = validateSource(body, store.sources.filter((s) => s.id !== params.id));
 */
export function validateSource(input: unknown, otherSources: readonly SourceConfig[] = []): SourceConfig {
  const result = validateWith(sourceSchema, input);
  if (!result.ok) throw invalid(result.issues);
  const source = result.value;
  if (otherSources.some((s) => s.id === source.id)) {
    throw new FerryError('conflict', `id: a source with id ${JSON.stringify(source.id)} already exists`, 'id');
  }
  if (otherSources.some((s) => s.writeKey === source.writeKey)) {
    throw new FerryError('conflict', 'writeKey: another source already uses this write key', 'writeKey');
  }
  return source;
}

/**
 * Validates one destination for the admin API.
 *
 * @param input The request body.
 * @param knownSourceIds Ids of the existing sources; each of the destination's `sources`
 *   must be one of them.
 * @param otherDestinationIds Ids it must not clash with; when replacing a destination,
 *   leave the replaced one out.
 * @param types The destination types it may have; default the built-in ones.
 * @returns The destination with defaults applied, its settings as its type's schema outputs them.
 * @throws FerryError `invalid_settings` (400) naming the path and rule, or `conflict` (409)
 *   when the id is taken.
 */
export function validateDestination(
  input: unknown,
  knownSourceIds: Iterable<string>,
  otherDestinationIds: Iterable<string> = [],
  types: DestinationRegistry = builtInDestinationTypes,
): DestinationConfig {
  const result = validateWith(schemasFor(types).destination, input);
  if (!result.ok) throw invalid(result.issues);
  const destination = result.value;
  const known = new Set(knownSourceIds);
  const unknown: ConfigIssue[] = [];
  destination.sources.forEach((id, j) => {
    if (!known.has(id)) unknown.push({ path: `sources[${j}]`, message: unknownSourceMessage(id, known) });
  });
  if (unknown.length > 0) throw invalid(unknown);
  if (new Set(otherDestinationIds).has(destination.id)) {
    throw new FerryError('conflict', `id: a destination with id ${JSON.stringify(destination.id)} already exists`, 'id');
  }
  return destination;
}
