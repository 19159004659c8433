import type { Logger } from 'pino';
import type { Clock } from './clock.js';

/** Options of {@link RepeatedErrorLog}. */
export interface RepeatedErrorLogOptions {
  logger: Logger;
  /** Time of the intervals; tests inject a manual clock. */
  clock: Clock;
  /** At most one line per this many ms while the same error keeps recurring. */
  intervalMs: number;
  /** The line logged with the error, e.g. `delivery claim failed; retrying after the poll interval`. */
  message: string;
  /** Logged (info) by {@link RepeatedErrorLog.resolved} after errors, e.g. `delivery claims work again`. */
  recoveredMessage: string;
}

/**
 * Logs an error that a loop meets again at every turn (a full disk, a database that is down)
 * once per interval instead of at every turn. The first occurrence is logged in full, stack
 * included; while the same error (same name, code and message) recurs, one line per interval
 * says how many times it repeated since the last line; a different error is logged in full
 * at once. When the loop succeeds again, {@link resolved} reports the repeats not yet
 * reported and that it recovered. No timer is involved: lines are written by the calls.
 *
 * @example
 * ```ts
 * const claimErrors = new RepeatedErrorLog({ logger, clock, intervalMs: 60_000,
 *   message: 'delivery claim failed', recoveredMessage: 'delivery claims work again' });
 * try { await claim(); claimErrors.resolved(); } catch (err) { claimErrors.report(err); }
 * ```
 */
export class RepeatedErrorLog {
  /** The error being repeated: its identity, when its last line was written, repeats since. */
  private current: { key: string; message: string; lastLineAtMs: number; repeats: number } | undefined;

  constructor(private readonly o: RepeatedErrorLogOptions) {}

  /** One occurrence of `error`; `fields` go on the lines it causes. */
  report(error: unknown, fields: Record<string, unknown> = {}): void {
    const nowMs = this.o.clock.now();
    const key = identity(error);
    const current = this.current;
    if (current?.key === key) {
      current.repeats++;
      if (nowMs - current.lastLineAtMs >= this.o.intervalMs) this.reportRepeats(nowMs, fields);
      return;
    }
    if (current) this.reportRepeats(nowMs, fields);
    this.o.logger.error({ ...fields, err: error }, this.o.message);
    this.current = { key, message: messageOf(error), lastLineAtMs: nowMs, repeats: 0 };
  }

  /** The loop succeeded: reports what is left to report, if an error was being repeated. */
  resolved(fields: Record<string, unknown> = {}): void {
    if (!this.current) return;
    this.reportRepeats(this.o.clock.now(), fields);
    this.current = undefined;
    this.o.logger.info(fields, this.o.recoveredMessage);
  }

  private reportRepeats(nowMs: number, fields: Record<string, unknown>): void {
    const current = this.current!;
    if (current.repeats === 0) return;
    const seconds = Math.round((nowMs - current.lastLineAtMs) / 1000);
    this.o.logger.error(
      { ...fields, error: current.message, repeats: current.repeats },
      `${this.o.message}; the same error repeated ${current.repeats} time${current.repeats === 1 ? '' : 's'} in the last ${seconds} s`,
    );
    current.lastLineAtMs = nowMs;
    current.repeats = 0;
  }
}

/** What makes two errors "the same": name, code and message (not the stack, which may differ). */
function identity(error: unknown): string {
  if (!(error instanceof Error)) return `value:${String(error)}`;
  const code = (error as { code?: unknown }).code;
  return `${error.name}:${typeof code === 'string' || typeof code === 'number' ? code : ''}:${error.message}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
