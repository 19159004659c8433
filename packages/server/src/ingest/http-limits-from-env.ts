import type { HttpServerSettings } from '../config/defaults.js';

/**
 * The HTTP limits an operator sets in the environment: `FERRY_MAX_CONNECTIONS_PER_ADDRESS`
 * (an integer, 0 for no limit) and `FERRY_INGEST_BODY_BUDGET_BYTES` (an integer, at least
 * 1 MiB, the most one gzip request may reserve). Unset or empty variables are left out; any
 * other value is an error naming the variable, so a typo never runs with a silent default.
 */
export function httpLimitsFromEnv(env: NodeJS.ProcessEnv): Partial<HttpServerSettings> {
  const limits: Partial<HttpServerSettings> = {};
  const perAddress = integerFrom(env, 'FERRY_MAX_CONNECTIONS_PER_ADDRESS', 0);
  if (perAddress !== undefined) limits.maxConnectionsPerAddress = perAddress;
  const budget = integerFrom(env, 'FERRY_INGEST_BODY_BUDGET_BYTES', minBodyBudgetBytes);
  if (budget !== undefined) limits.ingestBodyBudgetBytes = budget;
  return limits;
}

/** 1 MiB: above the most one request reserves (a gzip body and its decompressed copy), so a lone request always fits. */
export const minBodyBudgetBytes = 1024 * 1024;

function integerFrom(env: NodeJS.ProcessEnv, name: string, min: number): number | undefined {
  const text = env[name]?.trim();
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min)
    throw new Error(`${name} must be an integer of at least ${min} (got ${JSON.stringify(text)})`);
  return value;
}
