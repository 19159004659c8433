import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitLimitMs } from './deadline.js';

const packageDir = fileURLToPath(new URL('../..', import.meta.url));

/** Output of a child process. */
export interface ChildResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs an ES module snippet in a fresh Node process that resolves `@ferry/analytics` to its
 * sources, for what must be seen from outside: process exit, environment, stderr. A child
 * still running after the wait limit is killed.
 */
export function runModule(source: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ChildResult> {
  return runProcess(process.execPath, ['--conditions=ferry-source', '--import', 'tsx', '--input-type=module', '-e', source, ...args], env);
}

/** Runs a program from the package's folder and collects its output; killed after the wait limit. */
export function runProcess(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: packageDir,
      env: { ...process.env, DEBUG: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: waitLimitMs,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
