import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { within } from './deadline.js';

const packageDir = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Longest wait for a child's lines or exit: a child compiles the client's sources through tsx
 * before its first line, which alone has taken several seconds on a busy two-core machine.
 */
export const childWaitMs = 30_000;

/**
 * Starts Node with the client's sources (tsx, the `ferry-source` condition) and the given
 * arguments, and splits its standard output into lines as they come (a line cut across two
 * chunks is joined first), for tests that act on what a child has printed so far.
 */
export function startWithLines(args: string[]) {
  const child = spawn(process.execPath, ['--conditions=ferry-source', '--import', 'tsx', ...args], {
    cwd: packageDir,
    env: { ...process.env, DEBUG: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  const watchers: Array<() => void> = [];
  child.stdout.on('data', (d: Buffer) => {
    const parts = (partial + d.toString()).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
    for (const w of watchers) w();
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  /** Resolves once `n` lines have come; rejects after {@link childWaitMs}. */
  const untilLines = (n: number) =>
    within(
      new Promise<void>((resolve) => {
        const check = () => lines.length >= n && resolve();
        watchers.push(check);
        check();
      }),
      `${n} lines from the child (have ${lines.length}; stderr: ${stderr})`,
      childWaitMs,
    );
  return { child, lines, exited, untilLines, stderr: () => stderr };
}
