import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { afterEach, beforeEach, describe, it } from 'node:test';
import * as nodeEntry from '@ferry/analytics';
import * as edgeEntry from '@ferry/analytics/edge';
import { runModule } from './support/run-child.js';
import { SinkServer } from './support/sink-server.js';

const srcDir = new URL('../src/', import.meta.url);

// Value imports and re-exports of one source file (`import type` and `export type` are erased
// from the output, so they load nothing at run time).
function runtimeSpecifiers(source: string): string[] {
  const out: string[] = [];
  const pattern = /^\s*(?:import|export)\s+(?!type\s)(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm;
  for (const m of source.matchAll(pattern)) out.push(m[1]!);
  for (const m of source.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1]!);
  return out;
}

/** Every source file the entry loads at run time, and every import that leaves the package. */
function importGraph(entry: string): { files: Set<string>; external: Map<string, string> } {
  const files = new Set<string>();
  const external = new Map<string, string>();
  const pending = [entry];
  // Bounded: the package has far fewer files than this.
  for (let steps = 0; pending.length > 0 && steps < 500; steps++) {
    const file = pending.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const spec of runtimeSpecifiers(readFileSync(new URL(file, srcDir), 'utf8'))) {
      if (!spec.startsWith('.')) external.set(spec, file);
      else pending.push(new URL(spec.replace(/\.js$/, '.ts'), new URL(file, srcDir)).href.slice(srcDir.href.length));
    }
  }
  return { files, external };
}

// Registered in the child before the client loads: any Node built-in asked for by a module of
// this package's sources fails to resolve, as it would where the runtime has none.
const blockNodeBuiltins = `
import { register } from 'node:module';
const hooks = \`
const builtins = new Set(${JSON.stringify(builtinModules)});
export async function resolve(specifier, context, next) {
  const bare = specifier.startsWith('node:') ? specifier.slice(5) : specifier;
  if (context.parentURL?.includes('/packages/analytics/src/') && (specifier.startsWith('node:') || builtins.has(bare))) {
    throw Object.assign(new Error('no Node built-in here: ' + specifier), { code: 'ERR_BLOCKED_BUILTIN' });
  }
  return next(specifier, context);
}\`;
register('data:text/javascript,' + encodeURIComponent(hooks));
`;

const edgeClientScript = `${blockNodeBuiltins}
const { Analytics } = await import('@ferry/analytics/edge');
const client = new Analytics('wk', { endpoint: process.argv[1], gzip: true, flushAt: 2 });
client.track({ userId: 'u', event: 'A' });
client.track({ userId: 'u', event: 'B' });
const result = await client.close();
let nodeEntry;
try {
  await import('@ferry/analytics');
  nodeEntry = 'loaded';
} catch (error) {
  nodeEntry = String(error.message);
}
console.log(JSON.stringify({ delivered: result.delivered, status: result.status, nodeEntry }));`;

describe('edge entry', () => {
  let sink: SinkServer;
  beforeEach(async () => {
    sink = await SinkServer.start();
  });
  afterEach(() => sink.close());

  it('imports nothing outside the package sources: no node: module, no built-in, no dependency', () => {
    const graph = importGraph('edge.ts');
    assert.ok(graph.files.has('analytics.ts') && graph.files.has('transport/fetch-transport.ts'), [...graph.files].join(', '));
    assert.deepEqual([...graph.external], []);
    // The check itself sees Node imports where they are: the Node entry has them.
    const node = importGraph('index.ts');
    assert.ok(
      [...node.external.keys()].some((s) => s === 'node:zlib'),
      [...node.external.keys()].join(', '),
    );
  });

  it('runs and delivers, gzipped, in a process where the package cannot load any Node built-in', async () => {
    const child = await runModule(edgeClientScript, [sink.url]);
    assert.equal(child.code, 0, child.stderr);
    const out = JSON.parse(child.stdout) as { delivered: number; status: string; nodeEntry: string };
    assert.equal(out.status, 'complete');
    assert.equal(out.delivered, 2);
    assert.match(out.nodeEntry, /no Node built-in here: node:/, 'the Node entry, by contrast, fails to load there');
    assert.equal(sink.requests.length, 1);
    assert.equal(sink.requests[0]!.headers['content-encoding'], 'gzip');
    assert.deepEqual(
      sink.accepted.map((m) => m['event']),
      ['A', 'B'],
    );
  });

  it("exports every name of the Node entry but the Node transports, and its Analytics is the Node one's base", () => {
    const nodeOnly = ['createNodeHttpTransport', 'createSocketTransport', 'spoolDefaults'];
    assert.deepEqual(
      Object.keys(edgeEntry).sort(),
      Object.keys(nodeEntry)
        .filter((n) => !nodeOnly.includes(n))
        .sort(),
    );
    assert.ok(new nodeEntry.Analytics('wk') instanceof edgeEntry.Analytics);
  });

  it('refuses a spool, which needs a file system, with invalid_option', () => {
    assert.throws(
      () => new edgeEntry.Analytics('wk', { spool: { dir: 'unused-spool-dir' } }),
      (e: unknown) => e instanceof edgeEntry.AnalyticsError && e.code === 'invalid_option' && /file system/.test(e.message),
    );
  });
});
