/**
 * The schemas of a destination's own delivery policy: which statuses are retried
 * (`retryStatuses`) and its circuit breaker (`circuitBreaker`). Kept apart from `schema.ts`,
 * which puts them in a destination; they import nothing of a stage.
 */
import { z } from 'zod';
import { defaultCircuitBreakerSettings } from './defaults.js';
import type { CircuitBreakerSettings, RetryStatus } from './model.js';
import { boundedInt, boundedNumber, rule, strict } from './schema-rules.js';

/** At most this many entries in `retryStatuses`. */
export const maxRetryStatuses = 100;

const statusClasses = ['3xx', '4xx', '5xx'] as const;

const retryStatusSchema = z.union([z.number(), z.string()]).superRefine(
  rule((v: number | string) => {
    if (typeof v === 'string') {
      return (statusClasses as readonly string[]).includes(v)
        ? undefined
        : `must be a status from 300 to 599 or one of "3xx", "4xx", "5xx"; got ${JSON.stringify(v)}`;
    }
    // 2xx is a success and 1xx never ends an exchange: neither can be retried.
    return Number.isInteger(v) && v >= 300 && v <= 599 ? undefined : `must be a status from 300 to 599 or one of "3xx", "4xx", "5xx"; got ${v}`;
  }),
);

/**
 * `retryStatuses`: the statuses an attempt retries, replacing the default list (408, 429,
 * "5xx"), e.g. `[408, 429, "5xx", 404, 409]`. Unique entries, at most {@link maxRetryStatuses};
 * an empty list retries no status (only failures without a response).
 */
export const retryStatusesSchema = z
  .array(retryStatusSchema)
  .superRefine((list, ctx) => {
    if (list.length > maxRetryStatuses) ctx.addIssue({ code: 'custom', message: `at most ${maxRetryStatuses} statuses (got ${list.length})`, input: list });
    list.forEach((v, i) => {
      if (list.indexOf(v) !== i) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(v)} is listed twice`, path: [i], input: v });
    });
  })
  .transform((list) => list as RetryStatus[]);

const day = 86_400_000;

/**
 * `circuitBreaker`: any subset of {@link CircuitBreakerSettings}, kept as written (the
 * defaults fill the rest where the breaker is used, so a changed default reaches stored
 * destinations). `maxCooldownMs` must not be below the cool-down it grows from.
 */
export const circuitBreakerSchema = strict({
  enabled: z.boolean().optional(),
  failures: boundedInt(1, 1_000).optional(),
  failureRate: boundedNumber(0.01, 1).optional(),
  windowMs: boundedInt(1_000, day).optional(),
  minimumAttempts: boundedInt(1, 1_000_000).optional(),
  cooldownMs: boundedInt(1, day).optional(),
  cooldownMultiplier: boundedNumber(1, 10).optional(),
  maxCooldownMs: boundedInt(1, day).optional(),
  rampStepMs: boundedInt(0, 600_000).optional(),
}).superRefine((b, ctx) => {
  const { cooldownMs, maxCooldownMs } = resolveCircuitBreaker(b);
  if (maxCooldownMs < cooldownMs) {
    const path = b.maxCooldownMs === undefined ? 'cooldownMs' : 'maxCooldownMs';
    ctx.addIssue({ code: 'custom', message: `maxCooldownMs (${maxCooldownMs}) must be at least cooldownMs (${cooldownMs})`, path: [path], input: b[path] });
  }
});

/** A destination's breaker settings with the defaults filled in. */
export function resolveCircuitBreaker(configured: Partial<CircuitBreakerSettings> | undefined): CircuitBreakerSettings {
  const out = { ...defaultCircuitBreakerSettings };
  for (const [key, value] of Object.entries(configured ?? {})) if (value !== undefined) (out as Record<string, unknown>)[key] = value;
  return out;
}
