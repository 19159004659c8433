#!/usr/bin/env node
// Runs every *.test.ts under packages/*/test with Node's own test runner, TypeScript loaded
// through tsx and workspace packages resolved to their sources (the "ferry-source" export
// condition), so the tests never depend on a stale build. An unfiltered run first checks
// formatting, the layering and the lint, and stops before any test when one of them fails;
// `npm test -- <filter>` runs only the tests it names.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureChromium } from './ensure-chromium.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const filters = process.argv.slice(2);

function findTests(dir, out = []) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name === 'fixtures') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) findTests(path, out);
    else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

const files = ['packages']
  .flatMap((d) => findTests(join(root, d)))
  .map((f) => relative(root, f))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

if (filters.length === 0) {
  const failed = ['format:check', 'depcheck', 'lint'].filter((check) => {
    console.log(`> npm run ${check}`);
    return spawnSync('npm', ['run', '--silent', check], { cwd: root, stdio: 'inherit' }).status !== 0;
  });
  if (failed.length > 0) {
    console.error(`\nnpm test: ${failed.map((c) => `npm run ${c}`).join(', ')} failed (above); no test was run.`);
    process.exit(1);
  }
}

// Browser tests (`*.browser.test.ts`, the dashboard's) need Chromium and the built dashboard: the build is made
// again when a dashboard source is newer than it, so a test never runs an old page.
if (files.some((f) => f.endsWith('.browser.test.ts'))) {
  if (!ensureChromium()) process.exit(1);
  if (dashboardStale()) {
    console.log('> npm run build --workspace @ferry/dashboard');
    if (spawnSync('npm', ['run', '--silent', 'build', '--workspace', '@ferry/dashboard'], { cwd: root, stdio: 'inherit' }).status !== 0) process.exit(1);
  }
}

function dashboardStale() {
  const built = join(root, 'packages/server/dashboard-assets/index.html');
  if (!existsSync(built)) return true;
  const builtAt = statSync(built).mtimeMs;
  const newest = (dir) =>
    readdirSync(dir).reduce((max, name) => {
      const path = join(dir, name);
      const stat = statSync(path);
      return Math.max(max, stat.isDirectory() ? newest(path) : stat.mtimeMs);
    }, 0);
  const dashboard = join(root, 'packages/dashboard');
  return (
    Math.max(newest(join(dashboard, 'src')), statSync(join(dashboard, 'index.html')).mtimeMs, statSync(join(dashboard, 'vite.config.ts')).mtimeMs) > builtAt
  );
}

const child = spawn(process.execPath, ['--conditions=ferry-source', '--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=120000', ...files], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, FERRY_LOG_LEVEL: process.env.FERRY_LOG_LEVEL ?? 'silent' },
});
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
