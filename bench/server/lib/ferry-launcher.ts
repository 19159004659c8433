/**
 * Bench-only launcher of the Ferry server (TypeScript via tsx, importing the built
 * `packages/server/dist`): the same server `ferry serve` builds, listening on loopback on a
 * free port, without starting the delivery worker unless `--deliver on` (with `--deliver signal`,
 * once it gets SIGUSR2). Used to fill a backlog,
 * to measure ingestion on its own, and (`--metrics on|off`) to compare a server with metrics
 * and one without. Prints `Ferry listening on <url>` like the CLI and stops cleanly on
 * SIGTERM. Like `ferry serve`, it uses PostgreSQL when `DATABASE_URL` is set (schema
 * `FERRY_DATABASE_SCHEMA`, created if missing), else SQLite in the data dir.
 *
 *   node --import tsx bench/server/lib/ferry-launcher.ts --config FILE --data DIR [--deliver on|signal] [--metrics off] [--prune-interval-ms N]
 */
import { applyEnvironment, createFerry, loadConfigFile, PgStore } from '../../../packages/server/dist/index.js';

const arg = (name: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  if (i === -1 || !process.argv[i + 1]) throw new Error(`--${name} is required`);
  return process.argv[i + 1]!;
};

const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
};
// `signal`: delivery starts on SIGUSR2, so that two servers compared side by side start together.
const deliverWhen = option('deliver');
const deliver = deliverWhen === 'on';
const metrics = option('metrics') !== 'off';
const pruneInterval = option('prune-interval-ms');
const pruneIntervalMs = pruneInterval === undefined ? undefined : Number(pruneInterval);

const config = applyEnvironment(loadConfigFile(arg('config'), process.env), process.env);
const databaseUrl = process.env['DATABASE_URL'] || undefined;
const store = databaseUrl ? await PgStore.open({ connectionString: databaseUrl, schema: process.env['FERRY_DATABASE_SCHEMA'] || undefined }) : undefined;
const logLevel = (process.env['FERRY_LOG_LEVEL'] || 'info') as 'info';
const ferry = await createFerry({
  config,
  dataDir: arg('data'),
  adminToken: process.env['FERRY_ADMIN_TOKEN'],
  deliver,
  metrics,
  logLevel,
  store,
  pruneIntervalMs,
});
const url = await ferry.start(0, '127.0.0.1');
// Before the line below: whoever reads it may signal at once (SIGUSR2 unheard would end the process).
if (deliverWhen === 'signal') process.once('SIGUSR2', () => ferry.worker.start());
process.stdout.write(`Ferry listening on ${url} (store: ${ferry.store.kind}, delivery ${deliverWhen ?? 'off'}, metrics ${metrics ? 'on' : 'off'})\n`);
let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    ferry.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`unclean stop: ${String(err)}\n`);
        process.exit(1);
      },
    );
  });
