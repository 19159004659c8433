import { setTimeout as delay } from 'node:timers/promises';
import type { Command } from 'commander';
import { CliError, exitCodes, type AdminClient } from '../admin-client.js';
import { adminClient, adminGroup, deliveryIdArg, timeFlag, usage, withAdminFlags, type AdminFlags } from '../admin-command.js';
import { note, print, printJson, progressBar } from '../output.js';

/** A replay too large to answer at once, run by the server in the background (`GET /replay-jobs/{id}`). */
export interface ReplayJob {
  id: string;
  status: 'running' | 'done' | 'failed';
  total: number;
  replayed: number;
  createdAt: string;
  finishedAt: string | null;
  filter: Record<string, unknown>;
}

/** What `POST /dead-letters/replay` answers: a dry run's count, a replay done, or a job. */
type ReplayAnswer = { dryRun: true; wouldReplay: number } | { replayed: number } | { job: ReplayJob };

interface ReplayFlags extends AdminFlags {
  destination?: string;
  since?: string;
  until?: string;
  errorClass?: string;
  dryRun?: boolean;
  all?: boolean;
  watch?: string;
  pollMs: string;
}

/** How often a job is looked at, by default: often enough for a bar that moves, rarely enough to cost the server nothing. */
const defaultPollMs = 1000;

/** The body of `POST /dead-letters/replay` for the arguments and flags: only what was given. */
function replayBody(ids: string[], flags: ReplayFlags): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (ids.length > 0) body['ids'] = ids.map(deliveryIdArg);
  if (flags.destination !== undefined) body['destinationId'] = flags.destination;
  if (flags.since !== undefined) body['since'] = timeFlag(flags.since, '--since');
  if (flags.until !== undefined) body['until'] = timeFlag(flags.until, '--until');
  if (flags.errorClass !== undefined) body['errorClass'] = flags.errorClass;
  // Replaying every dead letter is one keystroke from a typo: it must be asked for by name.
  if (Object.keys(body).length === 0 && !flags.all)
    throw usage('name what to replay: delivery ids, --destination, --since, --until or --error-class; or --all for every dead letter');
  if (flags.dryRun) body['dryRun'] = true;
  return body;
}

/**
 * Follows a replay job until it is done or failed: a bar on stderr redrawn in place when
 * stderr is a terminal, otherwise a line each time the count moves. Resolves with the job as
 * it ended.
 */
async function followJob(client: AdminClient, first: ReplayJob, pollMs: number): Promise<ReplayJob> {
  const tty = process.stderr.isTTY === true;
  let job = first;
  let shown = -1;
  const show = () => {
    if (tty) process.stderr.write(`\rreplay ${job.id} ${progressBar(job.replayed, job.total)}`);
    else if (job.replayed !== shown) note(`replay ${job.id}: ${job.replayed} of ${job.total} replayed`);
    shown = job.replayed;
  };
  show();
  while (job.status === 'running') {
    await delay(pollMs);
    job = await client.get<ReplayJob>(`/replay-jobs/${encodeURIComponent(job.id)}`);
    show();
  }
  if (tty) process.stderr.write('\n');
  return job;
}

async function finishJob(client: AdminClient, job: ReplayJob, flags: ReplayFlags): Promise<void> {
  const pollMs = Number(flags.pollMs);
  if (!Number.isInteger(pollMs) || pollMs < 10 || pollMs > 60_000) throw usage(`--poll-ms must be an integer from 10 to 60000 (got ${flags.pollMs})`);
  if (!flags.json) note(`replay job ${job.id}: ${job.total} dead letters to replay; following it (Ctrl-C stops following, not the job)`);
  const ended = await followJob(client, job, pollMs);
  if (flags.json) printJson(ended);
  else print(`replay job ${ended.id} ${ended.status}: ${ended.replayed} of ${ended.total} replayed`);
  if (ended.status === 'failed') throw new CliError(`replay job ${ended.id} failed after ${ended.replayed} of ${ended.total}`, exitCodes.refused);
}

/** `ferry replay`. */
export function registerReplay(program: Command): void {
  const command = adminGroup(program, 'replay', 'replay dead letters: the same bytes and messageId, a fresh retry window')
    .argument('[ids...]', 'delivery ids of dead letters')
    .option('--destination <id>', 'the dead letters of this destination')
    .option('--since <time>', 'dead-lettered at or after: ISO 8601, or a span back from now (15m, 2h, 7d)')
    .option('--until <time>', 'dead-lettered before: ISO 8601, or a span back from now')
    .option('--error-class <class>', 'dead letters whose last attempt failed with this error class (see docs/errors.md)')
    .option('--dry-run', 'only say how many would be replayed; change nothing')
    .option('--all', 'every dead letter (needed when nothing else is named)')
    .option('--watch <jobId>', 'follow a replay job already running instead of starting one')
    .option('--poll-ms <ms>', 'how often a replay job is looked at', String(defaultPollMs));
  withAdminFlags(command).action(async (ids: string[], flags: ReplayFlags) => {
    if (flags.watch !== undefined) {
      const client = adminClient(flags);
      return finishJob(client, await client.get<ReplayJob>(`/replay-jobs/${encodeURIComponent(flags.watch)}`), flags);
    }
    const body = replayBody(ids, flags);
    const client = adminClient(flags);
    const { body: answer } = await client.request<ReplayAnswer>('POST', '/dead-letters/replay', {}, body);
    if ('job' in answer) return finishJob(client, answer.job, flags);
    if (flags.json) return printJson(answer);
    if ('dryRun' in answer) return print(`would replay ${answer.wouldReplay} dead letter${answer.wouldReplay === 1 ? '' : 's'} (dry run: nothing changed)`);
    print(`replayed ${answer.replayed} dead letter${answer.replayed === 1 ? '' : 's'}`);
  });
}
