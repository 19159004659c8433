import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));
const cli = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

/** A `ferry` command running as its own process, from the sources (tsx), as a user would run it. */
export interface FerryProcess {
  child: ChildProcess;
  /** Everything printed so far on stdout and stderr. */
  output(): string;
  /** Resolves with the first match of `pattern` in the output (rejects if the process exits first). */
  waitForOutput(pattern: RegExp): Promise<RegExpMatchArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
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
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const l of listeners) l();
  };
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
    exited,
    waitForOutput(pattern) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = pattern.exec(output);
          if (m) {
            listeners.delete(check);
            resolve(m);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            listeners.delete(check);
            reject(new Error(`ferry exited before printing ${pattern}; output:\n${output}`));
          }
        };
        listeners.add(check);
        check();
      });
    },
  };
}
