#!/usr/bin/env node
import { Command } from 'commander';
import { ferryVersion } from '../util/version.js';
import { CliError } from './admin-client.js';
import { registerDeadLetters } from './commands/dead-letters.js';
import { registerDeliveries } from './commands/deliveries.js';
import { registerRegulations } from './commands/regulations.js';
import { registerReplay } from './commands/replay.js';
import { registerTail } from './commands/tail.js';
import { registerTokens } from './commands/tokens.js';
import type { ServeFlags } from './settings.js';
import type { DevOptions } from './dev.js';
import type { ListenOptions } from './listen.js';
import { registerConfigCommands } from './commands/config.js';

const program = new Command()
  .name('ferry')
  .description('Ferry: Segment-compatible ingestion, durable store, signed webhook delivery.')
  .version(ferryVersion)
  // Each command reads the flags after its name itself: `ferry replay archive --destination d`
  // gives --destination to `archive`, not to `replay`, which has a --destination of its own.
  .enablePositionalOptions();

program
  .command('serve')
  .description('run the server (ingestion API, admin API, delivery)')
  .option('-c, --config <file>', 'configuration file, YAML or JSON (env FERRY_CONFIG; default ferry.config.yaml)')
  .option('-p, --port <n>', 'port to listen on (env PORT; default 8080)')
  .option('-d, --data <dir>', 'data directory of the embedded store (env FERRY_DATA_DIR; default ./.ferry)')
  .option('--host <address>', 'address to bind (env HOST; default 0.0.0.0)')
  .option('--drain-ms <ms>', 'after SIGTERM, answer new requests 503 for at least this long before closing (env FERRY_DRAIN_MS; default 5000)')
  .option('--admin-port <n>', 'serve /admin (and /metrics) only on this port, not on --port (env FERRY_ADMIN_PORT; default: on --port)')
  .option('--admin-host <address>', 'address of the admin port (env FERRY_ADMIN_HOST; default 127.0.0.1)')
  // Loaded when run: the admin commands, clients of a running server, start without loading the server.
  .action(async (flags: ServeFlags) => (await import('./serve.js')).serveCommand(flags));

program
  .command('listen')
  .description('run a local webhook receiver that verifies and prints what arrives')
  .option('-p, --port <n>', 'port to listen on', '9000')
  .option('--host <address>', 'address to bind', '127.0.0.1')
  .option('-s, --secret <secret>', "the destination's shared secret (env FERRY_LISTEN_SECRET)")
  .option(
    '--whsec <secret>',
    'a Standard Webhooks secret of the destination, whsec_…; repeat it during a rotation (env FERRY_LISTEN_WHSEC, space-separated)',
    (value: string, previous: string[] = []) => [...previous, value],
  )
  .action(async (options: ListenOptions) => (await import('./listen.js')).listenCommand(options));

program
  .command('dev')
  .description('run the server with a local receiver and show one webhook delivered and verified (npm start)')
  .option('-c, --config <file>', 'configuration file', 'ferry.config.yaml')
  .option('-p, --port <n>', 'port to listen on (env PORT; default 8080)')
  .option('-d, --data <dir>', 'data directory (default ./.ferry)')
  .option('--listen-port <n>', 'port of the local receiver', '9000')
  .action(async (options: DevOptions) => (await import('./dev.js')).devCommand(options));

// The admin CLI: commands that talk to a running server through the admin API (docs/cli.md).
registerDeliveries(program);
registerDeadLetters(program);
registerReplay(program);
registerTail(program);
registerTokens(program);
registerRegulations(program);
registerConfigCommands(program);

program.parseAsync().catch(async (error: unknown) => {
  // Already loaded when a configuration failed: whatever threw it imported it.
  const { ConfigError } = await import('../config/load.js');
  if (error instanceof ConfigError) process.stderr.write(`ferry: invalid configuration: ${error.message}\n`);
  else process.stderr.write(`ferry: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(error instanceof CliError ? error.exitCode : 1);
});
