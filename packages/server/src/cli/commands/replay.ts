import type { Command } from 'commander';
import { adminClient, adminGroup, deliveryIdArg, timeFlag, usage, withAdminFlags, type AdminFlags } from '../admin-command.js';
import { print, printJson } from '../output.js';
import { registerArchiveReplay, registerReplayJobs } from './replay-archive.js';
import { defaultPollMs, finishJob, pollMsFlag, type ReplayJob } from './replay-job-follow.js';

export type { ReplayJob } from './replay-job-follow.js';

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

/** `ferry replay`: dead letters (ids and filters), `ferry replay archive` (stored events), `ferry replay jobs`. */
export function registerReplay(program: Command): void {
  const command = adminGroup(program, 'replay', 'replay dead letters: the same bytes and messageId, a fresh retry window')
    // `ferry replay archive --destination d`: the flags after a subcommand are the subcommand's own.
    .enablePositionalOptions()
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
      return finishJob(client, await client.get<ReplayJob>(`/replay-jobs/${encodeURIComponent(flags.watch)}`), flags, 'dead letters');
    }
    const body = replayBody(ids, flags);
    // Checked before the job exists: a bad flag must not leave a job running unfollowed.
    pollMsFlag(flags.pollMs);
    const client = adminClient(flags);
    const { body: answer } = await client.request<ReplayAnswer>('POST', '/dead-letters/replay', {}, body);
    if ('job' in answer) return finishJob(client, answer.job, flags, 'dead letters');
    if (flags.json) return printJson(answer);
    if ('dryRun' in answer) return print(`would replay ${answer.wouldReplay} dead letter${answer.wouldReplay === 1 ? '' : 's'} (dry run: nothing changed)`);
    print(`replayed ${answer.replayed} dead letter${answer.replayed === 1 ? '' : 's'}`);
  });
  registerArchiveReplay(command);
  registerReplayJobs(command);
}
