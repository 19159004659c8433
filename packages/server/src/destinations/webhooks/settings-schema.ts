/**
 * The `settings` of a Webhooks destination, as the config file and the admin API give them.
 * Messages never echo a shared secret or a header value.
 */
import { z } from 'zod';
import { isArrayPayload, rule, strict, stringField, describeValue } from '../../config/schema-rules.js';
import { formatUtcMs } from '../../model/timestamps.js';
import type { SigningSecret, StandardWebhooksSettings, WebhookEntry, WebhooksSettings } from './settings.js';

/** Limits of a Webhooks destination's settings. The first two come from the spec; the rest are sanity bounds. */
export const webhooksLimits = Object.freeze({
  /** Webhook URLs per destination (spec: 5). */
  maxWebhooks: 5,
  /** Static headers per webhook entry (spec: 5). */
  maxHeadersPerWebhook: 5,
  maxSharedSecretLength: 1024,
  maxUrlLength: 2048,
  maxHeaderNameLength: 256,
  maxHeaderValueLength: 8192,
  /** Standard Webhooks secrets at once, expiring ones included. */
  maxStandardWebhooksSecrets: 5,
  /** Bytes of a Standard Webhooks key: 24 (192 bits) at least, 64 (the HMAC-SHA256 block) at most. */
  minStandardWebhooksKeyBytes: 24,
  maxStandardWebhooksKeyBytes: 64,
  /** Shared secrets a rotation keeps signing beside the current one. */
  maxPreviousSharedSecrets: 4,
});

/**
 * Header names a webhook entry may not set, lower-cased. These are Ferry's own (DESIGN.md,
 * Standard Webhooks included, set or not); `transportHeaders` are managed by the HTTP
 * client, which refuses or mishandles them.
 */
const ferryOwnedHeaders = [
  'content-type',
  'content-length',
  'host',
  'user-agent',
  'x-signature',
  'x-ferry-source',
  'x-ferry-signatures',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
] as const;
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

const sharedSecretSchema = z.string().superRefine(
  rule((v: string) => {
    // An empty secret is refused rather than read as "unsigned": a `${SECRET:-}` that
    // silently turns signing off is a security downgrade nobody asked for.
    if (v === '') return 'must not be empty (leave the key out to send unsigned requests)';
    if (v.length > webhooksLimits.maxSharedSecretLength) return `at most ${webhooksLimits.maxSharedSecretLength} characters`;
    return undefined;
  }),
);

const isoUtc = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?Z$/;

/** An `expiresAt`: ISO 8601 in UTC; output in Ferry's one form (`formatUtcMs`). */
const expiresAtSchema = z
  .string()
  .superRefine(
    rule((v: string) => (isoUtc.test(v) && Number.isFinite(Date.parse(v)) ? undefined : 'must be an ISO 8601 date-time in UTC, e.g. 2026-01-02T03:04:05.000Z')),
  )
  .transform((v) => formatUtcMs(Date.parse(v)));

const base64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Why a Standard Webhooks secret is refused, or undefined. Never quotes the secret. */
export function checkStandardWebhooksSecret(v: string): string | undefined {
  if (!v.startsWith('whsec_')) return 'must start with whsec_ (a Standard Webhooks secret is whsec_ and the base64 of its key)';
  const encoded = v.slice('whsec_'.length);
  if (!base64.test(encoded)) return 'must be whsec_ followed by standard base64 (A-Z, a-z, 0-9, +, /, = padding)';
  const bytes = Buffer.byteLength(encoded, 'base64');
  const { minStandardWebhooksKeyBytes: min, maxStandardWebhooksKeyBytes: max } = webhooksLimits;
  if (bytes < min || bytes > max) return `must encode ${min} to ${max} bytes (got ${bytes})`;
  return undefined;
}

/** A secret with an optional end, written as the secret alone or as `{ secret, expiresAt }`. */
function signingSecretSchema(secret: z.ZodType<string>) {
  const either = z.union([secret, strict({ secret, expiresAt: expiresAtSchema.optional() })], {
    error: (iss) => (iss.code === 'invalid_union' ? `must be a secret or a mapping { secret, expiresAt } (got ${describeValue(iss.input)})` : undefined),
  });
  return either.transform((v): SigningSecret => {
    if (typeof v === 'string') return { secret: v };
    return v.expiresAt === undefined ? { secret: v.secret } : { secret: v.secret, expiresAt: v.expiresAt };
  });
}

/** A list refusing the same secret twice: it would sign twice for nothing. */
function noRepeatedSecret(list: unknown[], ctx: z.core.$RefinementCtx<unknown[]>): void {
  const seen = new Map<string, number>();
  list.forEach((entry, index) => {
    const secret = typeof entry === 'string' ? entry : stringField(entry, 'secret');
    if (secret === undefined) return;
    const first = seen.get(secret);
    if (first === undefined) seen.set(secret, index);
    else ctx.addIssue({ code: 'custom', message: `repeats the secret of entry ${first}`, path: [index], input: undefined });
  });
}

const standardWebhooksSchema = strict({
  secrets: z
    .array(signingSecretSchema(z.string().superRefine(rule(checkStandardWebhooksSecret))))
    .superRefine(
      (list, ctx) => {
        const max = webhooksLimits.maxStandardWebhooksSecrets;
        if (list.length === 0 || list.length > max) ctx.addIssue({ code: 'custom', message: `1 to ${max} secrets (got ${list.length})`, input: undefined });
      },
      { when: isArrayPayload },
    )
    .superRefine(noRepeatedSecret, { when: isArrayPayload })
    .superRefine(
      (list, ctx) => {
        // Every secret expiring would leave the destination sending unsigned once the last one
        // has: one secret at least signs for good (a rotation leaves the new one so).
        if (list.length > 0 && list.every((entry) => typeof entry === 'object' && entry !== null && stringField(entry, 'expiresAt') !== undefined))
          ctx.addIssue({
            code: 'custom',
            message: 'at least one secret must have no expiresAt: once every one has expired, nothing would sign',
            input: undefined,
          });
      },
      { when: isArrayPayload },
    ),
}).transform((s): StandardWebhooksSettings => ({ secrets: s.secrets }));

const previousSharedSecretsSchema = z
  .array(strict({ secret: sharedSecretSchema, expiresAt: expiresAtSchema }))
  .superRefine(
    (list, ctx) => {
      const max = webhooksLimits.maxPreviousSharedSecrets;
      if (list.length > max) ctx.addIssue({ code: 'custom', message: `at most ${max} previous secrets (got ${list.length})`, input: undefined });
    },
    { when: isArrayPayload },
  )
  .superRefine(noRepeatedSecret, { when: isArrayPayload });

/** Why a webhook URL is refused, or undefined when it is acceptable. Exported for the admin API and tests. */
export function checkWebhookUrl(v: string): string | undefined {
  if (v.length > webhooksLimits.maxUrlLength) return `at most ${webhooksLimits.maxUrlLength} characters`;
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
  if (names.length > webhooksLimits.maxHeadersPerWebhook) {
    ctx.addIssue({
      code: 'custom',
      message: `at most ${webhooksLimits.maxHeadersPerWebhook} headers per webhook (got ${names.length})`,
      input: headers,
    });
  }
  const seen = new Map<string, string>();
  for (const name of names) {
    const value = headers[name];
    const lower = name.toLowerCase();
    const issue = (message: string) => ctx.addIssue({ code: 'custom', message, path: [name], input: value });
    if (name === '' || !headerNamePattern.test(name) || name.length > webhooksLimits.maxHeaderNameLength) {
      issue(`header name ${JSON.stringify(name)} is not a valid HTTP token (letters, digits and !#$%&'*+-.^_\`|~)`);
      continue;
    }
    if ((ferryOwnedHeaders as readonly string[]).includes(lower)) {
      issue(
        `header ${JSON.stringify(name)} cannot be set: Content-Type, Content-Length, Host, User-Agent, X-Signature, X-Ferry-Source, X-Ferry-Signatures, webhook-id, webhook-timestamp and webhook-signature are set by Ferry (any case)`,
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
    } else if (value.length > webhooksLimits.maxHeaderValueLength) {
      issue(`header values are at most ${webhooksLimits.maxHeaderValueLength} characters`);
    }
  }
}

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
      if (list.length > webhooksLimits.maxWebhooks)
        ctx.addIssue({ code: 'custom', message: `at most ${webhooksLimits.maxWebhooks} webhook URLs (got ${list.length})`, input: list });
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
  previousSharedSecrets: previousSharedSecretsSchema.optional(),
  standardWebhooks: standardWebhooksSchema.optional(),
})
  .superRefine((s, ctx) => {
    if (s.previousSharedSecrets !== undefined && s.sharedSecret === undefined) {
      ctx.addIssue({
        code: 'custom',
        message:
          'previous shared secrets sign only beside a sharedSecret; to stop signing, remove both (PATCH {"settings":{"sharedSecret":null,"previousSharedSecrets":null}})',
        path: ['previousSharedSecrets'],
        input: undefined,
      });
    }
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
    if (s.previousSharedSecrets !== undefined && s.previousSharedSecrets.length > 0) out.previousSharedSecrets = s.previousSharedSecrets;
    if (s.standardWebhooks !== undefined) out.standardWebhooks = s.standardWebhooks;
    return out;
  });
