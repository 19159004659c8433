import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SinkServer } from './support/sink-server.js';

const run = promisify(execFile);
const packageDir = fileURLToPath(new URL('..', import.meta.url));
const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));

// Each snippet uses the built package the way an application would, from the repository
// root and without the ferry-source condition, and sends one message to the sink.
const cjs = `
const { Analytics, AnalyticsError } = require('@ferry/analytics');
const client = new Analytics('wk', { endpoint: process.argv[1] });
client.track({ userId: 'u', event: 'from require' });
client.close().then((r) => console.log(JSON.stringify({
  file: require.resolve('@ferry/analytics'), names: Object.keys(require('@ferry/analytics')).sort(), delivered: r.delivered,
  error: new AnalyticsError('closed') instanceof Error,
})));`;

const esm = `
import * as lib from '@ferry/analytics';
const client = new lib.Analytics('wk', { endpoint: process.argv[1] });
client.track({ userId: 'u', event: 'from import' });
const r = await client.close();
console.log(JSON.stringify({
  file: import.meta.resolve('@ferry/analytics'), names: Object.keys(lib).sort(), delivered: r.delivered,
  error: new lib.AnalyticsError('closed') instanceof Error,
}));`;

// An edge runtime resolves the package with its own condition (workerd for Cloudflare
// Workers); the root import must then be the edge build, which has no Node transports.
const edge = `
import * as lib from '@ferry/analytics';
const client = new lib.Analytics('wk', { endpoint: process.argv[1], gzip: true });
client.track({ userId: 'u', event: 'from workerd' });
const r = await client.close();
const { createRequire } = await import('node:module');
const viaRequire = createRequire(process.cwd() + '/').resolve('@ferry/analytics/edge');
console.log(JSON.stringify({ file: import.meta.resolve('@ferry/analytics'), viaRequire, delivered: r.delivered, socket: 'createSocketTransport' in lib }));`;

describe('package exports (built output)', () => {
  let sink: SinkServer;
  before(async () => {
    await run(process.execPath, ['scripts/build.mjs'], { cwd: packageDir });
    sink = await SinkServer.start();
  });
  after(() => sink.close());

  it('builds ESM and CommonJS output with type declarations', () => {
    for (const file of ['dist/esm/index.js', 'dist/esm/index.d.ts', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/cjs/package.json']) {
      assert.ok(existsSync(`${packageDir}/${file}`), file);
    }
  });

  it('works through require() and import from the repository root, with the same exports', async () => {
    const env = { ...process.env, NODE_OPTIONS: '' };
    const fromRequire = await run(process.execPath, ['-e', cjs, sink.url], { cwd: repoRoot, env });
    const fromImport = await run(process.execPath, ['--input-type=module', '-e', esm, sink.url], { cwd: repoRoot, env });
    const a = JSON.parse(fromRequire.stdout) as { file: string; names: string[]; delivered: number; error: boolean };
    const b = JSON.parse(fromImport.stdout) as typeof a;
    assert.match(a.file, /dist[\\/]cjs[\\/]index\.js$/);
    assert.match(b.file, /dist\/esm\/index\.js$/);
    assert.deepEqual(a.names, b.names);
    assert.ok(a.names.includes('Analytics') && a.names.includes('createNodeHttpTransport'));
    assert.equal(a.delivered, 1);
    assert.equal(b.delivered, 1);
    assert.ok(a.error && b.error);
    assert.deepEqual(sink.accepted.map((m) => m['event']).sort(), ['from import', 'from require']);
  });

  it('gives edge runtimes the edge build: under the workerd condition and as @ferry/analytics/edge', async () => {
    for (const file of ['dist/esm/edge.js', 'dist/esm/edge.d.ts', 'dist/cjs/edge.js']) assert.ok(existsSync(`${packageDir}/${file}`), file);
    const env = { ...process.env, NODE_OPTIONS: '' };
    const child = await run(process.execPath, ['--conditions=workerd', '--input-type=module', '-e', edge, sink.url], { cwd: repoRoot, env });
    const out = JSON.parse(child.stdout) as { file: string; viaRequire: string; delivered: number; socket: boolean };
    assert.match(out.file, /dist\/esm\/edge\.js$/);
    assert.match(out.viaRequire, /dist[\\/]cjs[\\/]edge\.js$/);
    assert.equal(out.delivered, 1);
    assert.equal(out.socket, false);
    assert.ok(sink.accepted.some((m) => m['event'] === 'from workerd'));
  });
});
