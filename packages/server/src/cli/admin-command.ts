import { Command } from 'commander';
import { AdminClient, CliError, exitCodes, resolveConnection, type ConnectionFlags } from './admin-client.js';

/** The flags every admin command has: where the server is, and whether to print JSON. */
export interface AdminFlags extends ConnectionFlags {
  json?: boolean;
}

/**
 * A command group of the admin CLI (`ferry deliveries`), added to `program`. Commander's own
 * refusals (an unknown flag, a missing argument) exit 2, as the command's own usage errors
 * do, not 1, which means the server refused; its subcommands inherit this.
 */
export function adminGroup(program: Command, name: string, description: string): Command {
  return program
    .command(name)
    .description(description)
    .exitOverride((error) => process.exit(error.exitCode === 1 ? exitCodes.usage : error.exitCode));
}

/** Adds `--url`, `--token-file` and `--json` to a command that talks to the admin API. */
export function withAdminFlags(command: Command): Command {
  return command
    .option('--url <url>', 'the Ferry server (env FERRY_URL; default http://127.0.0.1:8080); the token comes from FERRY_ADMIN_TOKEN')
    .option('--token-file <file>', 'read the admin token from this file instead of FERRY_ADMIN_TOKEN')
    .option('--json', 'print the API answer as JSON, for scripts');
}

/** A client of the server the flags (and the environment) name. */
export function adminClient(flags: ConnectionFlags): AdminClient {
  return new AdminClient(resolveConnection(flags, process.env));
}

/** A usage error: a flag's value is wrong. */
export function usage(message: string): CliError {
  return new CliError(message, exitCodes.usage);
}

/** Commander's collector of a repeated flag (`--user a --user b`). */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Parses `--limit`: an integer from 1 to 1000 (the API's own range, checked here to say which flag). */
export function pageLimitFlag(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw usage(`--limit must be an integer from 1 to 1000 (got ${raw})`);
  return n;
}

const relativeUnitsMs: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a time flag (`--since`, `--until`): an ISO 8601 date-time, sent as it is for the
 * server to check, or a span back from now (`90s`, `15m`, `2h`, `7d`), sent as the ISO time
 * it names.
 */
export function timeFlag(raw: string | undefined, flag: string, nowMs = Date.now()): string | undefined {
  if (raw === undefined) return undefined;
  const relative = /^(\d+)([smhd])$/.exec(raw.trim());
  if (relative) return new Date(nowMs - Number(relative[1]) * relativeUnitsMs[relative[2]!]!).toISOString();
  if (!/^\d{4}-\d{2}-\d{2}/.test(raw))
    throw usage(`${flag} must be an ISO 8601 date-time (2026-03-01T09:00:00Z) or a span back from now (15m, 2h, 7d) (got ${raw})`);
  return raw;
}

/** Parses a delivery id given as an argument. */
export function deliveryIdArg(raw: string): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw usage(`a delivery id is a positive integer (got ${raw})`);
  return n;
}
