import { applyEnvironment, loadConfigFile } from '../config/load.js';
import { redactConfig } from '../config/redact.js';
import type { FerryConfig } from '../config/model.js';
import { createFerry, type Ferry } from '../app.js';
import { PgStore } from '../store/postgres/pg-store.js';
import type { Store } from '../store/store.js';
import { resolveNodeId } from './node-id.js';
import { publicDemoKeyProblem } from './public-listener-guard.js';
import { readSettings, type ServeFlags, type Settings } from './settings.js';
import { stopOnSignals } from './stop-on-signals.js';

/** Loads the config and starts a server the way `ferry serve` does; used by `dev` too. */
export async function startFromSettings(
  settings: Settings,
  env: NodeJS.ProcessEnv,
  override?: (config: FerryConfig) => FerryConfig,
): Promise<{ ferry: Ferry; url: string; adminUrl: string }> {
  let config = applyEnvironment(loadConfigFile(settings.configPath, env), env);
  if (override) config = override(config);
  // Only a shared store holds leases another node could see: SQLite's die with the process.
  const nodeId = settings.databaseUrl ? resolveNodeId(settings.nodeId, settings.dataDir) : settings.nodeId;
  const store = settings.databaseUrl ? await openPostgres(settings.databaseUrl, settings.databaseSchema) : undefined;
  const ferry = await createFerry({
    config,
    dataDir: settings.dataDir,
    adminToken: settings.adminToken,
    nodeId,
    store,
    logLevel: settings.logLevel,
    trustProxy: settings.trustProxy,
    metricsPublic: settings.metricsPublic,
    http: settings.http,
    admin: settings.admin,
  });
  ferry.logger.debug({ file: settings.configPath, config: redactConfig(config) }, 'configuration in force');
  const problem = publicDemoKeyProblem(settings.host, ferry.catalog.sources());
  if (problem) {
    await ferry.stop();
    throw new Error(problem);
  }
  const { url, adminUrl } = await ferry.start({ port: settings.port, host: settings.host });
  return { ferry, url, adminUrl };
}

/** The PostgreSQL store named by DATABASE_URL; any other scheme is refused rather than ignored. */
export async function openPostgres(databaseUrl: string, schema: string | undefined): Promise<Store> {
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) throw new Error('DATABASE_URL must be a postgres:// URL (unset it to use the embedded SQLite store)');
  try {
    return await PgStore.open({ connectionString: databaseUrl, schema });
  } catch (error) {
    // The URL may hold a password: name the host only.
    const host = new URL(databaseUrl).host;
    throw new Error(`cannot open the PostgreSQL store at ${host}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** A local base URL a person can paste, even when the server listens on every interface. */
export function displayUrl(url: string): string {
  return url.replace('://0.0.0.0', '://127.0.0.1').replace('://[::]', '://127.0.0.1');
}

/** `ferry serve`. */
export async function serveCommand(flags: ServeFlags): Promise<void> {
  const env = process.env;
  const settings = readSettings(flags, env);
  const { ferry, url, adminUrl } = await startFromSettings(settings, env);
  const print = (line: string) => process.stdout.write(line + '\n');
  // Before the banner: whoever reads it may send SIGTERM at once.
  stopOnSignals(ferry, print, settings.drainMs);
  const base = displayUrl(url);
  print(`Ferry listening on ${base} (store: ${ferry.store.kind === 'sqlite' ? `sqlite in ${settings.dataDir}` : 'postgres'})`);
  print(`  ingestion: POST ${base}/v1/batch  (Basic auth: a source's write key as user name)`);
  const adminOnly = settings.admin ? ' (only on this listener)' : '';
  print(`  admin API: ${displayUrl(adminUrl)}/admin/v1${adminOnly}  (Authorization: Bearer <admin token>)`);
  // What is live: the store's catalogue, where the file's entries were applied and admin-made ones live on.
  const ids = (list: { id: string }[]) => list.map((x) => x.id).join(', ') || 'none';
  print(`  sources: ${ids(ferry.catalog.sources())}; destinations: ${ids(ferry.catalog.destinations())}`);
  if (ferry.generatedAdminToken) print(`  admin token (shown once; set FERRY_ADMIN_TOKEN to choose your own): ${ferry.generatedAdminToken}`);
}
