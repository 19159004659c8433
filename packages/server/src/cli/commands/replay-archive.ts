import type { Command } from 'commander';
import { adminClient, collect, pageLimitFlag, timeFlag, usage, withAdminFlags, type AdminFlags } from '../admin-command.js';
import { fields, print, printJson, table } from '../output.js';
import { defaultPollMs, finishJob, jobSummary, pollMsFlag, type ReplayJob } from './replay-job-follow.js';

interface ArchiveFlags extends AdminFlags {
  destination: string;
  source?: string[];
  since: string;
  until?: string;
  dryRun?: boolean;
  rate?: string;
  pollMs: string;
}

interface JobPage {
  jobs: ReplayJob[];
  next: string | null;
}

/** The body of `POST /replays` for the flags. */
function archiveBody(flags: ArchiveFlags): Record<string, unknown> {
  const body: Record<string, unknown> = { destinationId: flags.destination, since: timeFlag(flags.since, '--since') };
  if (flags.source !== undefined) body['sourceIds'] = flags.source;
  if (flags.until !== undefined) body['until'] = timeFlag(flags.until, '--until');
  if (flags.rate !== undefined) {
    const rate = Number(flags.rate);
    if (!Number.isFinite(rate) || rate <= 0) throw usage(`--rate must be a number of events per second above 0 (got ${flags.rate})`);
    body['ratePerSecond'] = rate;
  }
  if (flags.dryRun) body['dryRun'] = true;
  return body;
}

/** `ferry replay archive`: stored events sent again to a destination, as a job followed with a progress bar. */
export function registerArchiveReplay(replay: Command): void {
  withAdminFlags(
    replay
      .command('archive')
      .description("send stored events again to a destination (their messageIds kept), paced behind its live traffic; as far back as the events' retention")
      .requiredOption('--destination <id>', 'the destination to send them to (enabled)')
      .option('--source <id>', 'only the events of this source (repeat for several; default every source the destination is routed from)', collect)
      .requiredOption('--since <time>', 'received at or after: ISO 8601, or a span back from now (15m, 2h, 7d)')
      .option('--until <time>', 'received before (default now): ISO 8601, or a span back from now')
      .option('--dry-run', 'only say how many events would be sent; change nothing')
      .option('--rate <n>', 'send on at most n events per second (on top of the pacing behind live traffic)')
      .option('--poll-ms <ms>', 'how often the job is looked at', String(defaultPollMs)),
  ).action(async (flags: ArchiveFlags) => {
    const body = archiveBody(flags);
    // Checked before the job exists: a bad flag must not leave a job running unfollowed.
    pollMsFlag(flags.pollMs);
    const client = adminClient(flags);
    const { body: answer } = await client.request<{ dryRun: true; wouldReplay: number } | { job: ReplayJob }>('POST', '/replays', {}, body);
    if ('job' in answer) return finishJob(client, answer.job, flags, 'events');
    if (flags.json) return printJson(answer);
    print(`would send ${answer.wouldReplay} event${answer.wouldReplay === 1 ? '' : 's'} to ${flags.destination} (dry run: nothing changed)`);
  });
}

/** `ferry replay jobs ls|show|cancel`: replay jobs of both kinds. */
export function registerReplayJobs(replay: Command): void {
  const jobs = replay.command('jobs').description('replay jobs (dead letters and archive): list, show, cancel');

  withAdminFlags(
    jobs
      .command('ls')
      .description('list replay jobs, newest first')
      .option('--limit <n>', 'jobs per page, 1 to 1000 (default 100)')
      .option('--after <cursor>', 'start after this cursor (the `next` of the page before)'),
  ).action(async (flags: AdminFlags & { limit?: string; after?: string }) => {
    const page = await adminClient(flags).get<JobPage>('/replay-jobs', { limit: pageLimitFlag(flags.limit), after: flags.after });
    if (flags.json) return printJson(page);
    print(
      table(
        page.jobs,
        [
          { heading: 'ID', value: (j) => j.id },
          { heading: 'KIND', value: (j) => j.kind },
          { heading: 'STATUS', value: (j) => j.status },
          { heading: 'REPLAYED', value: (j) => j.replayed },
          { heading: 'SKIPPED', value: (j) => j.skipped ?? '' },
          { heading: 'TOTAL', value: (j) => j.total },
          { heading: 'DESTINATION', value: (j) => j.filter['destinationId'] ?? 'all' },
          { heading: 'CREATED', value: (j) => j.createdAt },
          { heading: 'FINISHED', value: (j) => j.finishedAt },
        ],
        'no replay jobs',
      ),
    );
    if (page.next !== null) print(`more: --after ${page.next}`);
  });

  withAdminFlags(jobs.command('show').description('show one replay job and its progress').argument('<id>', 'replay job id')).action(
    async (id: string, flags: AdminFlags) => {
      const job = await adminClient(flags).get<ReplayJob>(`/replay-jobs/${encodeURIComponent(id)}`);
      if (flags.json) return printJson(job);
      const { filter, cursor, ...rest } = job;
      print(fields([...Object.entries(rest), ...Object.entries(filter), ['cursor', JSON.stringify(cursor)]]));
    },
  );

  withAdminFlags(
    jobs
      .command('cancel')
      .description('cancel a running replay job: no batch after the one under way; what it queued is still sent')
      .argument('<id>', 'replay job id'),
  ).action(async (id: string, flags: AdminFlags) => {
    const { body: job } = await adminClient(flags).request<ReplayJob>('POST', `/replay-jobs/${encodeURIComponent(id)}/cancel`, {}, undefined);
    if (flags.json) return printJson(job);
    print(jobSummary(job));
  });
}
