import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { within } from './within.js';

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));
const cli = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
/** How long {@link FerryProcess.waitForOutput} and {@link FerryProcess.waitForExit} wait by default: a start from the sources included. */
const DEFAULT_WAIT_MS = 30_000;

/** A `ferry` command running as its own process, from the sources (tsx), as a user would run it. */
export interface FerryProcess {
  child: ChildProcess;
  /** Everything printed so far on stdout and stderr. */
  output(): string;
  /** What was printed so far on stdout alone (what a script reading `--json` sees). */
  stdout(): string;
  /**
   * Resolves with the first match of `pattern` in the output; rejects with the output so far
   * if the process exits first or nothing matches within `deadlineMs` (default 30 s).
   */
  waitForOutput(pattern: RegExp, deadlineMs?: number): Promise<RegExpMatchArray>;
  /** Settles when the process has exited, however long that takes. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** {@link exited}, failing after `deadlineMs` (default 30 s) with the output so far. */
  waitForExit(deadlineMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawnFerry(args: string[], env: Record<string, string> = {}): FerryProcess {
  const child = spawn(process.execPath, ['--conditions=ferry-source', '--import', 'tsx', cli, ...args], {
    cwd: repoRoot,
    // No drain unless a test asks for one (--drain-ms wins): a SIGTERM then stops at once.
    env: { ...process.env, FERRY_LOG_LEVEL: 'warn', FERRY_DRAIN_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Whatever happens to the test (a timeout skips its cleanup), the child dies with this process.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  child.once('exit', () => process.removeListener('exit', killOnExit));
  let output = '';
  let stdout = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const l of listeners) l();
  };
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      for (const l of listeners) l();
      resolve({ code, signal });
    }),
  );
  return {
    child,
    output: () => output,
    stdout: () => stdout,
    exited,
    waitForOutput(pattern, deadlineMs = DEFAULT_WAIT_MS) {
      return new Promise((resolve, reject) => {
        const settle = (outcome: () => void) => {
          listeners.delete(check);
          clearTimeout(timer);
          outcome();
        };
        const check = () => {
          const m = pattern.exec(output);
          if (m) settle(() => resolve(m));
          else if (child.exitCode !== null || child.signalCode !== null) {
            settle(() => reject(new Error(`ferry exited before printing ${pattern}; output:\n${output}`)));
          }
        };
        const timer = setTimeout(() => settle(() => reject(new Error(`ferry printed no ${pattern} within ${deadlineMs} ms; output:\n${output}`))), deadlineMs);
        listeners.add(check);
        check();
      });
    },
    waitForExit(deadlineMs = DEFAULT_WAIT_MS) {
      return within(deadlineMs, 'ferry to exit', exited).catch((error: Error) => {
        throw new Error(`${error.message}; output:\n${output}`);
      });
    },
  };
}
