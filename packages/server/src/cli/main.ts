#!/usr/bin/env node
import { Command } from 'commander';
import { ConfigError } from '../config/load.js';
import { ferryVersion } from '../util/version.js';
import { devCommand } from './dev.js';
import { collect, listenCommand } from './listen.js';
import { serveCommand } from './serve.js';

const program = new Command().name('ferry').description('Ferry: Segment-compatible ingestion, durable store, signed webhook delivery.').version(ferryVersion);

program
  .command('serve')
  .description('run the server (ingestion API, admin API, delivery)')
  .option('-c, --config <file>', 'configuration file, YAML or JSON (env FERRY_CONFIG; default ferry.config.yaml)')
  .option('-p, --port <n>', 'port to listen on (env PORT; default 8080)')
  .option('-d, --data <dir>', 'data directory of the embedded store (env FERRY_DATA_DIR; default ./.ferry)')
  .option('--host <address>', 'address to bind (env HOST; default 0.0.0.0)')
  .option('--drain-ms <ms>', 'after SIGTERM, answer new requests 503 for at least this long before closing (env FERRY_DRAIN_MS; default 5000)')
  .action(serveCommand);

program
  .command('listen')
  .description('run a local webhook receiver that verifies and prints what arrives')
  .option('-p, --port <n>', 'port to listen on', '9000')
  .option('--host <address>', 'address to bind', '127.0.0.1')
  .option('-s, --secret <secret>', "the destination's shared secret (env FERRY_LISTEN_SECRET)")
  .option(
    '--whsec <secret>',
    'a Standard Webhooks secret of the destination, whsec_…; repeat it during a rotation (env FERRY_LISTEN_WHSEC, space-separated)',
    collect,
  )
  .action(listenCommand);

program
  .command('dev')
  .description('run the server with a local receiver and show one webhook delivered and verified (npm start)')
  .option('-c, --config <file>', 'configuration file', 'ferry.config.yaml')
  .option('-p, --port <n>', 'port to listen on (env PORT; default 8080)')
  .option('-d, --data <dir>', 'data directory (default ./.ferry)')
  .option('--listen-port <n>', 'port of the local receiver', '9000')
  .action(devCommand);

program.parseAsync().catch((error: unknown) => {
  if (error instanceof ConfigError) process.stderr.write(`ferry: invalid configuration: ${error.message}\n`);
  else process.stderr.write(`ferry: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
