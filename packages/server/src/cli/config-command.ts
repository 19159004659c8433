/**
 * `ferry config plan|apply|export|validate`: the configuration file against the store that
 * `ferry serve` would open (`DATABASE_URL`, or SQLite in `--data` / `FERRY_DATA_DIR`), or
 * through a running server (`--url`, the admin token from `FERRY_ADMIN_TOKEN`) when that
 * server holds the SQLite store. See docs/configuration.md, "The file and the store".
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { loadConfigFile } from '../config/load.js';
import { readAppliedConfig } from '../control/applied-config.js';
import { applyCatalog } from '../control/catalog-apply.js';
import { exportCatalog, type CatalogExport } from '../control/catalog-export.js';
import { planCatalog, summarizePlan, type CatalogChange, type ChangeAction } from '../control/catalog-plan.js';
import { builtInDestinationTypes } from '../destinations/registry.js';
import { StoreInUseError } from '../store/sqlite/ownership-lock.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import type { Store } from '../store/store.js';
import { systemClock } from '../util/clock.js';
import { formatPlan } from './plan-output.js';
import { openPostgres } from './serve.js';
import { logLevels, readSettings } from './settings.js';

/** Flags of `ferry config plan` and `ferry config apply`. */
export interface PlanFlags {
  config?: string;
  data?: string;
  url?: string;
  json?: boolean;
}

/** Flags of `ferry config export`. */
export interface ExportFlags {
  data?: string;
  url?: string;
  out?: string;
}

/** What a plan or an apply answers, locally or from a server. */
interface PlanAnswer {
  changes: CatalogChange[];
  summary: Record<ChangeAction, number>;
  applied: boolean;
}

/** Longest a call to a running server may take. */
const serverDeadlineMs = 30_000;

function configPath(flags: { config?: string }, env: NodeJS.ProcessEnv): string {
  return resolve(flags.config ?? (env['FERRY_CONFIG'] || undefined) ?? 'ferry.config.yaml');
}

export function validateCommand(flags: { config?: string }, env: NodeJS.ProcessEnv): void {
  const path = configPath(flags, env);
  const config = loadConfigFile(path, env);
  const ids = (list: { id: string }[]) => (list.length === 0 ? '' : ` (${list.map((x) => x.id).join(', ')})`);
  process.stdout.write(
    `${path}: valid; ${plural(config.sources.length, 'source')}${ids(config.sources)}, ${plural(config.destinations.length, 'destination')}${ids(config.destinations)}\n`,
  );
}

export async function planCommand(flags: PlanFlags, env: NodeJS.ProcessEnv, apply: boolean): Promise<void> {
  const config = loadConfigFile(configPath(flags, env), env);
  const desired = { sources: config.sources, destinations: config.destinations };
  let answer: PlanAnswer;
  if (flags.url !== undefined) {
    answer = (await callServer(flags.url, env, 'POST', apply ? '/config/apply' : '/config/plan', { config: desired })) as PlanAnswer;
  } else {
    const types = builtInDestinationTypes;
    let changes: CatalogChange[];
    if (apply) {
      const options = { types, logger: cliLogger(env), clock: systemClock, origin: 'ferry config apply' };
      changes = await withStore(flags, env, 'create', (store) => applyCatalog(store, desired, options));
    } else if (sqliteStoreMissing(flags, env)) {
      // Before the first start there is nothing to compare with: everything would be created.
      process.stderr.write('ferry: no store yet; planning against an empty one\n');
      changes = planCatalog({ sources: [], destinations: [] }, desired, { types });
    } else {
      changes = await withStore(flags, env, 'refuse', async (store) =>
        planCatalog(await store.loadCatalog(), desired, { types, applied: await readAppliedConfig(store) }),
      );
    }
    answer = { changes, summary: summarizePlan(changes), applied: apply };
  }
  process.stdout.write(flags.json ? JSON.stringify(answer, null, 2) + '\n' : formatPlan(answer.changes, answer.summary, answer.applied));
}

export async function exportCommand(flags: ExportFlags, env: NodeJS.ProcessEnv): Promise<void> {
  const exported =
    flags.url !== undefined
      ? ((await callServer(flags.url, env, 'GET', '/config/export')) as CatalogExport)
      : await withStore(flags, env, 'refuse', async (store) => exportCatalog(await store.loadCatalog(), builtInDestinationTypes, new Date()));
  if (flags.out !== undefined) writeFileSync(flags.out, exported.yaml);
  else process.stdout.write(exported.yaml);
  const where = flags.out === undefined ? '' : ` to ${flags.out}`;
  const lines = [`ferry: exported the store's sources and destinations${where}.`];
  if (exported.variables.length > 0) {
    lines.push('Set these variables to the stored values before validating or applying the file:');
    for (const v of exported.variables) lines.push(`  ${v.name}  (${v.path})`);
  }
  process.stderr.write(lines.join('\n') + '\n');
}

/** Whether the store is SQLite and its file does not exist yet. */
function sqliteStoreMissing(flags: { config?: string; data?: string }, env: NodeJS.ProcessEnv): boolean {
  const settings = readSettings({ config: flags.config, data: flags.data }, env);
  return settings.databaseUrl === undefined && !existsSync(join(settings.dataDir, 'ferry.db'));
}

/**
 * Runs `fn` on the store `ferry serve` would open, closed afterwards.
 *
 * @param missing What to do when the SQLite store does not exist yet: create it (as a first
 *   `ferry serve` would), or refuse.
 */
async function withStore<T>(
  flags: { config?: string; data?: string },
  env: NodeJS.ProcessEnv,
  missing: 'create' | 'refuse',
  fn: (store: Store) => Promise<T>,
): Promise<T> {
  const settings = readSettings({ config: flags.config, data: flags.data }, env);
  let store: Store;
  if (settings.databaseUrl !== undefined) {
    store = await openPostgres(settings.databaseUrl, settings.databaseSchema);
  } else {
    const path = join(settings.dataDir, 'ferry.db');
    if (missing === 'refuse' && !existsSync(path))
      throw new Error(`no store at ${path}: give the data directory of the server (--data or FERRY_DATA_DIR), or DATABASE_URL for PostgreSQL`);
    try {
      store = new SqliteStore({ path });
    } catch (error) {
      if (!(error instanceof StoreInUseError)) throw error;
      throw new Error(
        `the SQLite store at ${path} is held by a running Ferry server (one process owns it); ` +
          `go through that server instead: add --url http://<host>:<port> with its admin token in FERRY_ADMIN_TOKEN`,
      );
    }
  }
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** Calls the admin API of a running server; its error answer becomes the error thrown. */
async function callServer(base: string, env: NodeJS.ProcessEnv, method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  const token = env['FERRY_ADMIN_TOKEN'];
  if (!token) throw new Error('--url needs the admin token of the server in FERRY_ADMIN_TOKEN');
  let url: URL;
  try {
    url = new URL(`${base.replace(/\/+$/, '')}/admin/v1${path}`);
  } catch {
    throw new Error(`--url must be the base URL of a Ferry server, such as http://127.0.0.1:8080 (got ${JSON.stringify(base)})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`--url must be an http:// or https:// URL (got ${JSON.stringify(base)})`);
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(serverDeadlineMs),
    });
  } catch (error) {
    const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
    throw new Error(`cannot reach the server at ${url.origin}: ${cause}`);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    throw new Error(`the server at ${url.origin} answered ${res.status} with something that is not JSON; is it a Ferry server?`);
  }
  if (!res.ok) {
    const errors = (json as { errors?: { code: string; message: string }[] } | undefined)?.errors ?? [];
    const detail = errors.map((e) => `${e.code}: ${e.message}`).join('; ') || `HTTP ${res.status}`;
    throw new Error(`the server answered ${res.status}: ${detail}`);
  }
  return json;
}

/**
 * The changes an apply makes are printed on standard output; its log lines go to standard error
 * only when `FERRY_LOG_LEVEL` asks for them.
 */
function cliLogger(env: NodeJS.ProcessEnv): pino.Logger {
  const level = env['FERRY_LOG_LEVEL']?.trim().toLowerCase();
  const known = logLevels.find((l) => l === level);
  return pino({ level: known ?? 'silent' }, pino.destination(2));
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
