import type { Command } from 'commander';
import type { ExportFlags, PlanFlags } from '../config-command.js';

// Loaded when run: these open the store, which the admin commands never need to load.
const load = () => import('../config-command.js');

/** Adds `ferry config` and its commands to the program. */
export function registerConfigCommands(program: Command): void {
  const config = program.command('config').description('check, plan, apply and export the configuration of sources and destinations');
  const file = '-c, --config <file>';
  const fileHelp = 'configuration file, YAML or JSON (env FERRY_CONFIG; default ferry.config.yaml)';
  const data = [
    '-d, --data <dir>',
    'data directory of the embedded store (env FERRY_DATA_DIR; default ./.ferry); DATABASE_URL names a PostgreSQL store',
  ] as const;
  const url = ['--url <server>', 'go through the running server at this base URL (admin token from FERRY_ADMIN_TOKEN) instead of opening the store'] as const;

  config
    .command('validate')
    .description('check a configuration file (its ${VAR} references expanded from the environment); needs no store')
    .option(file, fileHelp)
    .action(async (flags: { config?: string }) => void (await load()).validateCommand(flags, process.env));
  config
    .command('plan')
    .description('print what applying the file to the store would change')
    .option(file, fileHelp)
    .option(...data)
    .option(...url)
    .option('--json', 'print the plan as JSON')
    .action(async (flags: PlanFlags) => (await load()).planCommand(flags, process.env, false));
  config
    .command('apply')
    .description('apply the file to the store (to a running cluster through its store) and print what changed')
    .option(file, fileHelp)
    .option(...data)
    .option(...url)
    .option('--json', 'print what changed as JSON')
    .action(async (flags: PlanFlags) => (await load()).planCommand(flags, process.env, true));
  config
    .command('export')
    .description("write the store's sources and destinations as a configuration file, secrets as ${VAR} placeholders")
    .option('-o, --out <file>', 'write the file here (default: standard output)')
    .option(...data)
    .option(...url)
    .action(async (flags: ExportFlags) => (await load()).exportCommand(flags, process.env));
}
