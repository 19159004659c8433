import { resolve } from 'node:path';
import type { LevelWithSilent } from 'pino';
import { defaultProcessSettings, type HttpServerSettings } from '../config/defaults.js';
import { checkedNodeIdFromEnv } from './node-id.js';

/** The flags of `ferry serve` (and `ferry dev`) that have an environment variable too. */
export interface ServeFlags {
  config?: string;
  port?: string;
  data?: string;
  host?: string;
  drainMs?: string;
  adminPort?: string;
  adminHost?: string;
}

/** The pino levels `FERRY_LOG_LEVEL` may name. */
export const logLevels: readonly LevelWithSilent[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Every setting of a server process, from its flags and its environment, validated. */
export interface Settings {
  /** The configuration file, absolute (`--config`, `FERRY_CONFIG`). */
  configPath: string;
  /** `--port`, `PORT`. */
  port: number;
  /** `--host`, `HOST`. */
  host: string;
  /** `--drain-ms`, `FERRY_DRAIN_MS`. */
  drainMs: number;
  /** The SQLite data directory, absolute (`--data`, `FERRY_DATA_DIR`). */
  dataDir: string;
  /** `DATABASE_URL`: set, the store is PostgreSQL. */
  databaseUrl: string | undefined;
  /** `FERRY_DATABASE_SCHEMA`. */
  databaseSchema: string | undefined;
  /** `FERRY_ADMIN_TOKEN`. */
  adminToken: string | undefined;
  /** `FERRY_NODE_ID`, checked; unset, the server keeps a generated one in the data directory (see `resolveNodeId`). */
  nodeId: string | undefined;
  /** `FERRY_LOG_LEVEL`. */
  logLevel: LevelWithSilent;
  /** `FERRY_TRUST_PROXY`. */
  trustProxy: boolean;
  /** `FERRY_METRICS_PUBLIC`: `GET /metrics` without the admin token. */
  metricsPublic: boolean;
  /** `FERRY_MAX_CONNECTIONS_PER_ADDRESS` and `FERRY_INGEST_BODY_BUDGET_BYTES`, those that are set. */
  http: Partial<HttpServerSettings>;
  /**
   * The admin listener (`--admin-port`, `FERRY_ADMIN_PORT`; `--admin-host`, `FERRY_ADMIN_HOST`,
   * default `127.0.0.1`); undefined without a port: one listener serves everything.
   */
  admin: { port: number; host: string } | undefined;
}

/** Where the admin listener binds when only its port is given: it is for operators, not the network. */
export const defaultAdminHost = '127.0.0.1';

/**
 * 4 MiB: its keyless quarter is above the most one request reserves (a gzip body and its
 * decompressed copy), so a lone request always fits, with a header key or without.
 */
export const minBodyBudgetBytes = 4 * 1024 * 1024;

/**
 * Reads the settings of a server process, once: flags win over the environment, which wins
 * over the defaults; a variable set to the empty string counts as unset. Any value that is
 * not understood is an error naming its flag or variable, so a typo never runs with a silent
 * default. (`FERRY_ALLOW_PRIVATE_NETWORKS` and the file's `${VAR}` references are read with
 * the configuration file, from the same environment: see `loadConfigFile`.)
 */
export function readSettings(flags: ServeFlags, env: NodeJS.ProcessEnv): Settings {
  const fromEnv = (name: string) => env[name] || undefined;
  const rawPort = flags.port ?? fromEnv('PORT');
  const port = rawPort === undefined ? defaultProcessSettings.port : Number(rawPort);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`port must be an integer from 0 to 65535 (got ${rawPort})`);
  const rawDrain = flags.drainMs ?? fromEnv('FERRY_DRAIN_MS');
  const drainMs = rawDrain === undefined ? defaultProcessSettings.drainMs : Number(rawDrain);
  if (rawDrain?.trim() === '' || !Number.isInteger(drainMs) || drainMs < 0 || drainMs > 300_000)
    throw new Error(`the drain time (--drain-ms, FERRY_DRAIN_MS) must be an integer from 0 to 300000 ms (got ${rawDrain})`);
  return {
    configPath: resolve(flags.config ?? fromEnv('FERRY_CONFIG') ?? defaultProcessSettings.configFile),
    port,
    host: flags.host ?? fromEnv('HOST') ?? defaultProcessSettings.host,
    drainMs,
    dataDir: resolve(flags.data ?? fromEnv('FERRY_DATA_DIR') ?? defaultProcessSettings.dataDir),
    databaseUrl: fromEnv('DATABASE_URL'),
    databaseSchema: fromEnv('FERRY_DATABASE_SCHEMA'),
    adminToken: fromEnv('FERRY_ADMIN_TOKEN'),
    nodeId: nodeIdFrom(env),
    logLevel: logLevelFrom(env),
    trustProxy: switchFrom(env, 'FERRY_TRUST_PROXY') ?? false,
    metricsPublic: switchFrom(env, 'FERRY_METRICS_PUBLIC') ?? false,
    http: httpLimitsFrom(env),
    admin: adminListenerFrom(flags, env, port),
  };
}

/** The admin listener's port and host, checked: a host without a port, or the public port again, is an error. */
function adminListenerFrom(flags: ServeFlags, env: NodeJS.ProcessEnv, publicPort: number): Settings['admin'] {
  const rawPort = flags.adminPort ?? (env['FERRY_ADMIN_PORT'] || undefined);
  const host = flags.adminHost ?? (env['FERRY_ADMIN_HOST'] || undefined);
  if (rawPort === undefined) {
    if (host !== undefined) throw new Error('the admin host (--admin-host, FERRY_ADMIN_HOST) needs an admin port (--admin-port, FERRY_ADMIN_PORT)');
    return undefined;
  }
  const port = Number(rawPort);
  if (rawPort.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`the admin port (--admin-port, FERRY_ADMIN_PORT) must be an integer from 0 to 65535 (got ${rawPort})`);
  if (port !== 0 && port === publicPort) throw new Error(`the admin port (--admin-port, FERRY_ADMIN_PORT) must differ from the port (${publicPort})`);
  return { port, host: host ?? defaultAdminHost };
}

/**
 * The HTTP limits an operator sets in the environment: `FERRY_MAX_CONNECTIONS_PER_ADDRESS`
 * (an integer, 0 for no limit) and `FERRY_INGEST_BODY_BUDGET_BYTES` (an integer, at least
 * {@link minBodyBudgetBytes}). Unset or empty variables are left out.
 */
export function httpLimitsFrom(env: NodeJS.ProcessEnv): Partial<HttpServerSettings> {
  const limits: Partial<HttpServerSettings> = {};
  const perAddress = integerFrom(env, 'FERRY_MAX_CONNECTIONS_PER_ADDRESS', 0);
  if (perAddress !== undefined) limits.maxConnectionsPerAddress = perAddress;
  const budget = integerFrom(env, 'FERRY_INGEST_BODY_BUDGET_BYTES', minBodyBudgetBytes);
  if (budget !== undefined) limits.ingestBodyBudgetBytes = budget;
  return limits;
}

function integerFrom(env: NodeJS.ProcessEnv, name: string, min: number): number | undefined {
  const text = env[name]?.trim();
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min)
    throw new Error(`${name} must be an integer of at least ${min} (got ${JSON.stringify(text)})`);
  return value;
}

function nodeIdFrom(env: NodeJS.ProcessEnv): string | undefined {
  const text = env['FERRY_NODE_ID'];
  if (text === undefined || text === '') return undefined;
  return checkedNodeIdFromEnv(text);
}

function logLevelFrom(env: NodeJS.ProcessEnv): LevelWithSilent {
  const text = env['FERRY_LOG_LEVEL']?.trim().toLowerCase();
  if (text === undefined || text === '') return defaultProcessSettings.logLevel;
  const level = logLevels.find((l) => l === text);
  if (level === undefined) throw new Error(`FERRY_LOG_LEVEL must be one of ${logLevels.join(', ')} (got ${JSON.stringify(env['FERRY_LOG_LEVEL'])})`);
  return level;
}

/** `1`/`true`/`yes` on, `0`/`false`/`no` off, unset or empty undefined. */
function switchFrom(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const text = env[name]?.trim().toLowerCase();
  if (text === undefined || text === '') return undefined;
  if (['1', 'true', 'yes'].includes(text)) return true;
  if (['0', 'false', 'no'].includes(text)) return false;
  throw new Error(`${name} must be 1, true, yes, 0, false or no (got ${JSON.stringify(env[name])})`);
}
