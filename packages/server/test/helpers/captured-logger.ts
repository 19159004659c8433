import pino, { type Logger } from 'pino';

/** A real pino logger at `info` whose lines are kept, parsed, in `lines`, for tests to read. */
export function capturedLogger(): { logger: Logger; lines: Record<string, any>[] } {
  const lines: Record<string, any>[] = [];
  return { lines, logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }) };
}
