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

/** Error kinds followed at once; past this, the one followed longest is reported and dropped. */
const maxKinds = 32;

/** One kind of error being repeated: its first message, when its last line was written, repeats since. */
interface Repeating {
  message: string;
  lastLineAtMs: number;
  repeats: number;
}

/**
 * Logs an error that a loop meets again at every turn (a full disk, a database that is down)
 * once per interval instead of at every turn. Errors are told apart by their code (their
 * name and message when they have none), so an error whose text changes (a path, a count)
 * stays one kind. The first occurrence of a kind is logged in full, stack included; while it
 * recurs, one line per interval says how many times it repeated since the last line. Each
 * kind is followed on its own, so errors that alternate do not each get a full line at every
 * turn. When the loop succeeds again, {@link resolved} reports the repeats not yet reported
 * and that it recovered. No timer is involved: lines are written by the calls.
 *
 * @example
 * ```ts
 * const claimErrors = new RepeatedErrorLog({ logger, clock, intervalMs: 60_000,
 *   message: 'delivery claim failed', recoveredMessage: 'delivery claims work again' });
 * try { await claim(); claimErrors.resolved(); } catch (err) { claimErrors.report(err); }
 * ```
 */
export class RepeatedErrorLog {
  /** The kinds of error being repeated, by identity, the one followed longest first. */
  private readonly repeating = new Map<string, Repeating>();

  constructor(private readonly o: RepeatedErrorLogOptions) {}

  /** One occurrence of `error`; `fields` go on the lines it causes. */
  report(error: unknown, fields: Record<string, unknown> = {}): void {
    const nowMs = this.o.clock.now();
    const key = identity(error);
    const known = this.repeating.get(key);
    if (known) {
      known.repeats++;
      if (nowMs - known.lastLineAtMs >= this.o.intervalMs) this.reportRepeats(known, nowMs, fields);
      return;
    }
    if (this.repeating.size >= maxKinds) {
      const [oldestKey, oldest] = this.repeating.entries().next().value!;
      this.reportRepeats(oldest, nowMs, fields);
      this.repeating.delete(oldestKey);
    }
    this.o.logger.error({ ...fields, err: error }, this.o.message);
    this.repeating.set(key, { message: messageOf(error), lastLineAtMs: nowMs, repeats: 0 });
  }

  /** The loop succeeded: reports what is left to report, if errors were being repeated. */
  resolved(fields: Record<string, unknown> = {}): void {
    if (this.repeating.size === 0) return;
    const nowMs = this.o.clock.now();
    for (const repeating of this.repeating.values()) this.reportRepeats(repeating, nowMs, fields);
    this.repeating.clear();
    this.o.logger.info(fields, this.o.recoveredMessage);
  }

  private reportRepeats(repeating: Repeating, nowMs: number, fields: Record<string, unknown>): void {
    if (repeating.repeats === 0) return;
    const seconds = Math.round((nowMs - repeating.lastLineAtMs) / 1000);
    this.o.logger.error(
      { ...fields, error: repeating.message, repeats: repeating.repeats },
      `${this.o.message}; the same error repeated ${repeating.repeats} time${repeating.repeats === 1 ? '' : 's'} in the last ${seconds} s`,
    );
    repeating.lastLineAtMs = nowMs;
    repeating.repeats = 0;
  }
}

/** What makes two errors "the same": their code when they have one, else their name and message (never the stack). */
function identity(error: unknown): string {
  if (!(error instanceof Error)) return `value:${String(error)}`;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') return `code:${code}`;
  return `message:${error.name}:${error.message}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
