import { setTimeout as delay } from 'node:timers/promises';
import { CliError, exitCodes, type AdminClient } from '../admin-client.js';
import { usage } from '../admin-command.js';
import { note, print, printJson, progressBar } from '../output.js';

/** A replay run by the server in the background (`GET /replay-jobs/{id}`): of dead letters, or of stored events (the archive). */
export interface ReplayJob {
  id: string;
  kind: 'dead_letters' | 'archive';
  status: 'running' | 'done' | 'failed' | 'cancelled';
  total: number;
  replayed: number;
  /** Archive jobs only: events passed over (the destination's filter, a delivery already there, a user being deleted). */
  skipped?: number;
  createdAt: string;
  finishedAt: string | null;
  error: string | null;
  cursor: unknown;
  filter: Record<string, unknown>;
}

/** How often a job is looked at, by default: often enough for a bar that moves, rarely enough to cost the server nothing. */
export const defaultPollMs = 1000;

/** What a job has got through: the dead letters replayed, or the events an archive job sent on or passed over. */
function progressOf(job: ReplayJob): number {
  return job.kind === 'archive' ? Math.min(job.total, job.replayed + (job.skipped ?? 0)) : job.replayed;
}

/** One line saying where a job stands. */
export function jobSummary(job: ReplayJob): string {
  const skipped = job.kind === 'archive' ? `, ${job.skipped ?? 0} skipped` : '';
  return `replay job ${job.id} ${job.status}: ${job.replayed} of ${job.total} replayed${skipped}`;
}

/**
 * Follows a replay job until it is over: a bar on stderr redrawn in place when stderr is a
 * terminal, otherwise a line each time the count moves. Resolves with the job as it ended.
 */
async function followJob(client: AdminClient, first: ReplayJob, pollMs: number): Promise<ReplayJob> {
  const tty = process.stderr.isTTY === true;
  let job = first;
  let shown = -1;
  const show = () => {
    const done = progressOf(job);
    if (tty) process.stderr.write(`\rreplay ${job.id} ${progressBar(done, job.total)}`);
    else if (done !== shown) note(`replay ${job.id}: ${job.replayed} of ${job.total} replayed${job.kind === 'archive' ? `, ${job.skipped ?? 0} skipped` : ''}`);
    shown = done;
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

/** Parses `--poll-ms`. */
export function pollMsFlag(raw: string): number {
  const pollMs = Number(raw);
  if (!Number.isInteger(pollMs) || pollMs < 10 || pollMs > 60_000) throw usage(`--poll-ms must be an integer from 10 to 60000 (got ${raw})`);
  return pollMs;
}

/**
 * Follows a job to its end and prints how it ended; a job that failed or was cancelled exits 1.
 *
 * @param what What the job replays, for the line that starts following it ("dead letters", "events").
 */
export async function finishJob(client: AdminClient, job: ReplayJob, flags: { json?: boolean; pollMs: string }, what: string): Promise<void> {
  const pollMs = pollMsFlag(flags.pollMs);
  if (!flags.json) note(`replay job ${job.id}: ${job.total} ${what} to replay; following it (Ctrl-C stops following, not the job)`);
  const ended = await followJob(client, job, pollMs);
  if (flags.json) printJson(ended);
  else print(jobSummary(ended));
  if (ended.status === 'failed' || ended.status === 'cancelled')
    throw new CliError(`replay job ${ended.id} ${ended.status} after ${ended.replayed} of ${ended.total}`, exitCodes.refused);
}
