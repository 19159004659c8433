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
import {
  defaultAudienceSettings,
  defaultDeliverySettings,
  defaultDestinationEnabled,
  defaultNetworkSettings,
  defaultRetrySettings,
} from './defaults.js';
import type {
  AudienceSettings,
  DeliverySettings,
  DestinationConfig,
  FerryConfig,
  NetworkSettings,
  RetrySettings,
  SourceConfig,
  WebhookEntry,
  WebhooksSettings,
} from './model.js';

/** Limits enforced by the schema. The first two come from the spec; the rest are sanity bounds. */
export const configLimits = Object.freeze({
  /** Webhook URLs per destination (spec: 5). */
  maxWebhooks: 5,
  /** Static headers per webhook entry (spec: 5). */
  maxHeadersPerWebhook: 5,
  maxIdLength: 64,
  maxNameLength: 200,
  maxWriteKeyLength: 256,
  maxSharedSecretLength: 1024,
  maxUrlLength: 2048,
  maxHeaderNameLength: 256,
  maxHeaderValueLength: 8192,
  maxAllowedNetworks: 100,
});

/**
 * Header names a webhook entry may not set, lower-cased. The first five are Ferry's own
 * (DESIGN.md); the rest are managed by the HTTP client, which refuses or mishandles them.
 */
const ferryOwnedHeaders = ['content-type', 'content-length', 'host', 'user-agent', 'x-signature', 'x-ferry-source'] as const;
const transportHeaders = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'content-encoding',
] as const;

/** The one destination type that exists, spelt as in a call's `integrations` map. */
export const destinationTypes = ['Webhooks'] as const;

// ---------------------------------------------------------------------------------------
// Issues and paths

/** One broken rule: where (`destinations[0].settings.webhooks`) and which rule. */
export interface ConfigIssue {
  /** Path inside the validated value, e.g. `destinations[0].settings.webhooks[5]`; empty for the top level. */
  path: string;
  message: string;
}

/**
 * Formats a path as a reader of the file would write it: `a.b[0].c`. Keys made of
 * letters, digits, `_`, `$` and `-` stay bare (`headers.X-Team`); others are quoted
 * (`headers["X Team"]`).
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'symbol') out += `[${String(key)}]`;
    else if (/^[A-Za-z0-9_$-]+$/.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out;
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : 'a number';
  return typeof value;
}

function describeExpected(expected: string): string {
  switch (expected) {
    case 'object':
    case 'record':
      return 'a mapping (object)';
    case 'array':
      return 'a list';
    case 'int':
      return 'an integer';
    case 'boolean':
      return 'true or false';
    default:
      return `a ${expected}`;
  }
}

/** Messages for the issues that zod raises itself; the rules below raise their own. Values are never echoed. */
const errorMap: z.core.$ZodErrorMap = (iss) => {
  switch (iss.code) {
    case 'invalid_type':
      if (iss.input === undefined) return 'is required';
      if (iss.expected === 'boolean' && typeof iss.input === 'string') {
        return `must be true or false (got a string; a \${VAR} reference always yields a string)`;
      }
      if (iss.expected === 'number' && typeof iss.input === 'string') {
        return `must be a number (got a string; a \${VAR} reference always yields a string)`;
      }
      return `must be ${describeExpected(iss.expected)} (got ${describeValue(iss.input)})`;
    case 'unrecognized_keys':
      return 'unknown key';
    default:
      return undefined;
  }
};

/** A strict object whose unknown-key message lists the keys that are allowed. */
function strict<T extends z.core.$ZodLooseShape>(shape: T) {
  const allowed = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (iss) => (iss.code === 'unrecognized_keys' ? `unknown key; allowed keys here: ${allowed}` : undefined),
  });
}

/** Turns a rule (a function returning a message when broken) into a zod refinement. */
function rule<T>(check: (value: T) => string | undefined) {
  return (value: T, ctx: z.core.$RefinementCtx<T>): void => {
    const message = check(value);
    if (message !== undefined) ctx.addIssue({ code: 'custom', message, input: value });
  };
}

/** Converts zod's issues to {@link ConfigIssue}s, one per unknown key. */
export function toConfigIssues(error: z.core.$ZodError): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const iss of error.issues) {
    if (iss.code === 'unrecognized_keys') {
      for (const key of iss.keys) out.push({ path: formatPath([...iss.path, key]), message: iss.message });
    } else {
      out.push({ path: formatPath(iss.path), message: iss.message });
    }
  }
  return out;
}

/** `path: message`, or the message alone at the top level. */
export function formatIssue(issue: ConfigIssue): string {
  return issue.path === '' ? issue.message : `${issue.path}: ${issue.message}`;
}

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

const sharedSecretSchema = z.string().superRefine(
  rule((v: string) => {
    // An empty secret is refused rather than read as "unsigned": a `${SECRET:-}` that
    // silently turns signing off is a security downgrade nobody asked for.
    if (v === '') return 'must not be empty (leave the key out to send unsigned requests)';
    if (v.length > configLimits.maxSharedSecretLength) return `at most ${configLimits.maxSharedSecretLength} characters`;
    return undefined;
  }),
);

/** Why a webhook URL is refused, or undefined when it is acceptable. Exported for the admin API and tests. */
export function checkWebhookUrl(v: string): string | undefined {
  if (v.length > configLimits.maxUrlLength) return `at most ${configLimits.maxUrlLength} characters`;
  // `new URL` silently strips surrounding whitespace and some controls; a URL that
  // needed stripping is a copy-paste accident worth reporting.
  // eslint-disable-next-line no-control-regex -- control characters are exactly what this looks for
  if (/[\s\x00-\x1f\x7f]/.test(v)) return 'must not contain spaces or control characters';
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return `must be a full URL including the http:// or https:// protocol (got ${JSON.stringify(v)})`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return `must use the http:// or https:// protocol (got ${url.protocol}//)`;
  }
  if (url.hostname === '') return 'must name a host';
  // Credentials in a URL end up in logs and API answers that show the URL; headers are
  // redacted everywhere, so that is where credentials belong.
  if (url.username !== '' || url.password !== '') {
    return 'must not contain credentials (user:password@); send them in a header such as Authorization';
  }
  return undefined;
}

const urlSchema = z.string().superRefine(rule(checkWebhookUrl));

// RFC 9110 token characters.
const headerNamePattern = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// What undici accepts in a header value: tab, visible ASCII, space and Latin-1.
const headerValuePattern = /^[\t\x20-\x7e\x80-\xff]*$/;

function checkHeaders(headers: Record<string, unknown>, ctx: z.core.$RefinementCtx<Record<string, unknown>>): void {
  const names = Object.keys(headers);
  if (names.length > configLimits.maxHeadersPerWebhook) {
    ctx.addIssue({
      code: 'custom',
      message: `at most ${configLimits.maxHeadersPerWebhook} headers per webhook (got ${names.length})`,
      input: headers,
    });
  }
  const seen = new Map<string, string>();
  for (const name of names) {
    const value = headers[name];
    const lower = name.toLowerCase();
    const issue = (message: string) => ctx.addIssue({ code: 'custom', message, path: [name], input: value });
    if (name === '' || !headerNamePattern.test(name) || name.length > configLimits.maxHeaderNameLength) {
      issue(`header name ${JSON.stringify(name)} is not a valid HTTP token (letters, digits and !#$%&'*+-.^_\`|~)`);
      continue;
    }
    if ((ferryOwnedHeaders as readonly string[]).includes(lower)) {
      issue(
        `header ${JSON.stringify(name)} cannot be set: Content-Type, Content-Length, Host, User-Agent, X-Signature and X-Ferry-Source are set by Ferry (any case)`,
      );
      continue;
    }
    if ((transportHeaders as readonly string[]).includes(lower)) {
      issue(`header ${JSON.stringify(name)} cannot be set: it is managed by the HTTP client`);
      continue;
    }
    const previous = seen.get(lower);
    if (previous !== undefined) {
      issue(`header ${JSON.stringify(name)} repeats ${JSON.stringify(previous)}; header names are case-insensitive`);
      continue;
    }
    seen.set(lower, name);
    if (typeof value !== 'string') {
      issue(`header values must be strings (got ${describeValue(value)}; quote numbers in YAML)`);
    } else if (/[\r\n\0]/.test(value)) {
      issue('header values must not contain CR, LF or NUL (they would inject headers)');
    } else if (!headerValuePattern.test(value)) {
      issue('header values may contain only printable ASCII, tab and Latin-1 characters');
    } else if (value.length > configLimits.maxHeaderValueLength) {
      issue(`header values are at most ${configLimits.maxHeaderValueLength} characters`);
    }
  }
}

function boundedInt(min: number, max: number) {
  return z.number().superRefine(
    rule((v: number) =>
      Number.isInteger(v) && v >= min && v <= max ? undefined : `must be an integer from ${min} to ${max} (got ${v})`,
    ),
  );
}

function boundedNumber(min: number, max: number) {
  return z.number().superRefine(
    rule((v: number) => (v >= min && v <= max ? undefined : `must be a number from ${min} to ${max} (got ${v})`)),
  );
}

/**
 * Cross-checks run with `{ when }` even where a part broke a rule of its own, so that a file
 * breaking several rules reports every one of them; they then see the raw input of the
 * broken parts, hence these guards.
 */
function isArrayPayload(payload: { value: unknown }): boolean {
  return Array.isArray(payload.value);
}

function isObjectPayload(payload: { value: unknown }): boolean {
  return payload.value !== null && typeof payload.value === 'object' && !Array.isArray(payload.value);
}

/** `value[key]` when `value` is an object and that field a string. */
function stringField(value: unknown, key: string): string | undefined {
  const field = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
  return typeof field === 'string' ? field : undefined;
}

/** `value` when it is a list, else an empty one. */
function listOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

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

/** One webhook entry. Output: {@link WebhookEntry} with `headers` always present. */
export const webhookEntrySchema = strict({
  url: urlSchema,
  // Values are typed inside checkHeaders, so that a wrong type does not hide the other header rules.
  headers: z
    .record(z.string(), z.unknown())
    .superRefine(checkHeaders)
    .transform((h) => h as Record<string, string>)
    .optional(),
}).transform((e): WebhookEntry => ({ url: e.url, headers: { ...(e.headers ?? {}) } }));

const webhooksListSchema = z
  .array(webhookEntrySchema)
  .superRefine(
    (list, ctx) => {
      // Not `.max()`: zod stops at a size check and would hide every rule broken inside the entries.
      if (list.length > configLimits.maxWebhooks)
        ctx.addIssue({ code: 'custom', message: `at most ${configLimits.maxWebhooks} webhook URLs (got ${list.length})`, input: list });
    },
    { when: isArrayPayload },
  )
  .superRefine(
    (list, ctx) => {
      // Entries that broke a rule of their own are still compared by whatever URL they name.
      const seen = new Map<string, number>();
      list.forEach((entry, index) => {
        const url = stringField(entry, 'url');
        if (url === undefined) return;
        const first = seen.get(url);
        if (first === undefined) {
          seen.set(url, index);
          return;
        }
        ctx.addIssue({
          code: 'custom',
          message: `duplicate webhook URL (also webhooks[${first}]); it would receive every event twice`,
          path: [index, 'url'],
          input: url,
        });
      });
    },
    { when: isArrayPayload },
  );

/**
 * The `settings` of a Webhooks destination. `webhookUrl`, the spec's single-URL setting,
 * means the same as `webhooks[0].url`: given alone it becomes the only entry; given with
 * `webhooks` it must equal the first URL. Output: {@link WebhooksSettings}, always with
 * `webhooks`.
 */
export const webhooksSettingsSchema = strict({
  webhooks: webhooksListSchema.optional(),
  webhookUrl: urlSchema.optional(),
  sharedSecret: sharedSecretSchema.optional(),
})
  .superRefine((s, ctx) => {
    const list = s.webhooks ?? [];
    if (list.length === 0 && s.webhookUrl === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'at least one webhook URL is required (settings.webhooks or settings.webhookUrl)',
        path: s.webhooks === undefined ? [] : ['webhooks'],
        input: s,
      });
    }
    const first = list[0];
    if (first !== undefined && s.webhookUrl !== undefined && s.webhookUrl !== first.url) {
      ctx.addIssue({
        code: 'custom',
        message: 'webhookUrl means the same as webhooks[0].url; give one of them, or the same URL in both',
        path: ['webhookUrl'],
        input: s.webhookUrl,
      });
    }
  })
  .transform((s): WebhooksSettings => {
    const webhooks = s.webhooks !== undefined && s.webhooks.length > 0 ? s.webhooks : [];
    if (webhooks.length === 0 && s.webhookUrl !== undefined) webhooks.push({ url: s.webhookUrl, headers: {} });
    const out: WebhooksSettings = { webhooks };
    if (s.sharedSecret !== undefined) out.sharedSecret = s.sharedSecret;
    return out;
  });

/**
 * One destination as written in the file or sent to the admin API, without the check that
 * its sources exist (that needs the other sources: see {@link validateDestination}).
 * `sources` is required and may be empty: a destination connected to nothing receives
 * nothing, which lets one be prepared before its sources exist.
 */
export const destinationSchema = strict({
  id: idSchema,
  type: z.string().superRefine(
    rule((v: string) =>
      (destinationTypes as readonly string[]).includes(v)
        ? undefined
        : `unknown destination type ${JSON.stringify(v)}; the only type is "Webhooks" (case-sensitive)`,
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
  settings: webhooksSettingsSchema,
}).transform(
  (d): DestinationConfig => ({
    id: d.id,
    type: 'Webhooks',
    name: d.name ?? d.id,
    enabled: d.enabled ?? defaultDestinationEnabled,
    sources: [...d.sources],
    settings: d.settings,
  }),
);

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
  pollIntervalMs: boundedInt(1, 60_000).optional(),
})
  .transform((d): DeliverySettings => {
    const { retry, ...rest } = d;
    return {
      ...merged<Omit<DeliverySettings, 'retry'>>(defaultDeliverySettings, rest),
      retry: merged<RetrySettings>(defaultRetrySettings, retry ?? {}),
    };
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
        list.length > configLimits.maxAllowedNetworks
          ? `at most ${configLimits.maxAllowedNetworks} ranges (got ${list.length})`
          : undefined,
      ),
    )
    .optional(),
}).transform(
  (n): NetworkSettings => ({
    allowPrivateNetworks: n.allowPrivateNetworks ?? defaultNetworkSettings.allowPrivateNetworks,
    allowedNetworks: [...(n.allowedNetworks ?? defaultNetworkSettings.allowedNetworks)],
  }),
);

/** The `audiences` section: any subset of {@link AudienceSettings}, merged over the defaults. */
export const audienceSettingsSchema = strict({
  syncIntervalMs: boundedInt(1, day).optional(),
}).transform((a): AudienceSettings => merged<AudienceSettings>(defaultAudienceSettings, a));

// ---------------------------------------------------------------------------------------
// The whole file

/** Reports each item whose key (when it has one) an earlier item already has. */
function findDuplicates<T>(
  items: readonly T[],
  key: (item: T) => string | undefined,
  report: (index: number, firstIndex: number) => void,
): void {
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
export const ferryConfigSchema = strict({
  sources: z.array(sourceSchema).optional(),
  destinations: z.array(destinationSchema).optional(),
  delivery: deliverySettingsSchema.optional(),
  network: networkSettingsSchema.optional(),
  audiences: audienceSettingsSchema.optional(),
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
  .transform(
    (c): FerryConfig => ({
      sources: c.sources ?? [],
      destinations: c.destinations ?? [],
      delivery: c.delivery ?? deliverySettingsSchema.parse({}),
      network: c.network ?? networkSettingsSchema.parse({}),
      audiences: c.audiences ?? audienceSettingsSchema.parse({}),
    }),
  );

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

/** Validates a whole configuration object (already `${VAR}`-expanded). */
export function validateConfig(input: unknown): ValidationResult<FerryConfig> {
  return validateWith(ferryConfigSchema, input);
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
 * @returns The destination with defaults applied and `webhookUrl` folded into `webhooks`.
 * @throws FerryError `invalid_settings` (400) naming the path and rule, or `conflict` (409)
 *   when the id is taken.
 */
export function validateDestination(
  input: unknown,
  knownSourceIds: Iterable<string>,
  otherDestinationIds: Iterable<string> = [],
): DestinationConfig {
  const result = validateWith(destinationSchema, input);
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
