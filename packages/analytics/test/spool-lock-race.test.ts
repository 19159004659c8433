import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { childWaitMs, startWithLines } from './support/child-lines.js';
import { within } from './support/deadline.js';

const starters = 4;

// Waits for the `go` file so every child tries at the same moment, reports, then holds what it
// took until `done` exists, so no lock is released before the others have tried.
const starter = `
import { existsSync, writeSync } from 'node:fs';
import { acquireSpoolLock } from './src/spool/spool-lock.ts';
const [dir, go, done] = process.argv.slice(1);
const until = Date.now() + ${childWaitMs};
const tick = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
writeSync(1, 'ready\\n');
while (!existsSync(go) && Date.now() < until) await tick(1);
let outcome = 'got';
try {
  acquireSpoolLock(dir);
} catch (error) {
  outcome = error.code ?? String(error);
}
writeSync(1, outcome + '\\n');
while (!existsSync(done) && Date.now() < until) await tick(5);
`;

function startStarter(dir: string, go: string, done: string) {
  return startWithLines(['--input-type=module', '-e', starter, dir, go, done]);
}

describe('spool lock between processes', () => {
  let dir: string;
  let signals: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'ferry-spool-lock-'));
    signals = mkdtempSync(join(tmpdir(), 'ferry-spool-lock-signals-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(signals, { recursive: true, force: true });
  });

  it('gives a stale lock to exactly one of several processes starting at once', async () => {
    const dead = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    await within(new Promise((resolve) => dead.once('exit', resolve)), 'a short-lived process to exit');
    writeFileSync(join(dir, 'spool.lock'), `${dead.pid}\n`);
    const go = join(signals, 'go');
    const done = join(signals, 'done');
    const children = Array.from({ length: starters }, () => startStarter(dir, go, done));
    try {
      for (const c of children) await c.untilLines(1);
      writeFileSync(go, '');
      for (const c of children) await c.untilLines(2);
    } finally {
      writeFileSync(done, '');
      for (const c of children) if (c.child.exitCode === null) c.child.kill();
      await within(Promise.all(children.map((c) => c.exited)), 'the starters to exit', childWaitMs);
    }
    const outcomes = children.map((c) => c.lines[1]).sort();
    assert.deepEqual(outcomes, ['got', ...Array<string>(starters - 1).fill('spool_locked')]);
  });
});
