import type { Command } from 'commander';
import { CliError, exitCodes } from '../admin-client.js';
import { adminClient, adminGroup, withAdminFlags, type AdminFlags } from '../admin-command.js';
import { cell, note } from '../output.js';
import { readServerSentEvents } from '../server-sent-events.js';

/** Short names of the ids a tail line shows, so a line stays readable. */
const shortNames: Record<string, string> = {
  sourceId: 'source',
  destinationId: 'destination',
  id: 'delivery',
  regulationId: 'regulation',
  audienceId: 'audience',
};

/** One line per event: its time, its name, then each field as `name=value` (strings with spaces quoted). */
export function tailLine(event: string, data: Record<string, unknown>): string {
  const { at, ...rest } = data;
  const parts = Object.entries(rest).map(([key, value]) => {
    const text = cell(value);
    return `${shortNames[key] ?? key}=${typeof value === 'string' && /\s/.test(value) ? JSON.stringify(value) : text}`;
  });
  return `${cell(at)}  ${event.padEnd(18)}  ${parts.join(' ')}`;
}

/** `ferry tail`. */
export function registerTail(program: Command): void {
  const command = adminGroup(program, 'tail', 'print what happens in the server as it happens: accepted events and delivery outcomes').option(
    '--events <names>',
    'comma-separated event names (ingest:accepted,delivery:dead,...; default all, see docs/cli.md)',
  );
  withAdminFlags(command).action(async (flags: AdminFlags & { events?: string }) => {
    const client = adminClient(flags);
    const stop = new AbortController();
    let stopped = false;
    const onSignal = () => {
      stopped = true;
      stop.abort();
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    const res = await client.stream('/tail', { events: flags.events }, stop.signal);
    note(`ferry: tailing ${client.url('/tail', { events: flags.events })} (Ctrl-C to stop)`);
    let draining = false;
    try {
      for await (const { event, data } of readServerSentEvents(res.body!)) {
        const payload = JSON.parse(data) as Record<string, unknown>;
        if (event === 'lifecycle:draining') draining = true;
        process.stdout.write(flags.json ? `${JSON.stringify({ event, data: payload })}\n` : `${tailLine(event, payload)}\n`);
      }
    } catch (error) {
      if (stopped) return;
      throw new CliError(`lost the stream: ${error instanceof Error ? error.message : String(error)}`, exitCodes.unreachable);
    }
    if (!stopped) note(`ferry: the server ended the stream${draining ? ' (it is stopping)' : ''}`);
  });
}
