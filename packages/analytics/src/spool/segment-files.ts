import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const logPattern = /^(\d{10})\.log$/;
const ackPattern = /^(\d{10})\.ack$/;

/** Path of segment `id`'s message log. */
export function logPath(dir: string, id: number): string {
  return join(dir, `${String(id).padStart(10, '0')}.log`);
}

/** Path of segment `id`'s acknowledgements: the messageIds of its messages that are done. */
export function ackPath(dir: string, id: number): string {
  return join(dir, `${String(id).padStart(10, '0')}.ack`);
}

/** Ids of the segments in `dir` (those with a log, and stray acknowledgement files), oldest first. */
export function listSegments(dir: string): { logs: number[]; strayAcks: number[] } {
  const logs: number[] = [];
  const acks: number[] = [];
  for (const name of readdirSync(dir)) {
    const log = logPattern.exec(name);
    if (log) logs.push(Number(log[1]));
    const ack = ackPattern.exec(name);
    if (ack) acks.push(Number(ack[1]));
  }
  logs.sort((a, b) => a - b);
  const known = new Set(logs);
  return { logs, strayAcks: acks.filter((id) => !known.has(id)) };
}
