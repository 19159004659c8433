import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runProcess } from './support/run-child.js';
import { countIds, SinkServer } from './support/sink-server.js';

const require = createRequire(import.meta.url);
const sourceDir = fileURLToPath(new URL('../src/', import.meta.url));

/**
 * Bun's binary from its platform package (a root dev dependency): the `bun` package's own
 * launcher needs an install script, which the project keeps off.
 */
function bunBinary(): string {
  const name = `@oven/bun-${process.platform}-${process.arch}/bin/bun`;
  try {
    return require.resolve(name);
  } catch {
    throw new Error(`Bun is not installed (${name}): run npm ci at the repository's root`);
  }
}

/** A script that sends `count` track calls through the given entry and prints what flush and close said. */
function script(entry: string, options: string): string {
  return `
import { Analytics } from ${JSON.stringify(join(sourceDir, entry))};
// Counts the requests that go through the standard fetch, to tell which transport sent them.
let fetches = 0;
const realFetch = globalThis.fetch;
globalThis.fetch = (...args) => (fetches++, realFetch(...args));
const count = Number(process.env.COUNT);
const client = new Analytics('wk', { endpoint: process.env.SINK, flushAt: 20, ${options} });
const ids = [];
for (let i = 0; i < count; i++) ids.push(client.track({ userId: 'u' + (i % 7), event: 'Bun ' + i, properties: { i } }));
const flushed = await client.flush();
await client.close();
console.log(JSON.stringify({ runtime: typeof Bun === 'undefined' ? 'other' : 'bun ' + Bun.version, ids, flushed, fetches }));
`;
}

describe('the client under Bun', () => {
  let sink: SinkServer;
  let dir: string;
  before(async () => {
    sink = await SinkServer.start();
    dir = mkdtempSync(join(tmpdir(), 'ferry-bun-'));
  });
  after(async () => {
    await sink.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const cases = [
    { name: 'the default entry, gzip on', entry: 'index.ts', options: 'gzip: true', viaFetch: false },
    { name: 'the default entry with the fetch transport', entry: 'index.ts', options: "transport: 'fetch', gzip: true", viaFetch: true },
    { name: 'the edge entry (fetch, CompressionStream)', entry: 'edge.ts', options: 'gzip: true', viaFetch: true },
  ];
  for (const c of cases) {
    it(`delivers every call exactly once through ${c.name}`, async () => {
      const file = join(dir, `${c.entry}-${cases.indexOf(c)}.ts`);
      writeFileSync(file, script(c.entry, c.options));
      const firstAccepted = sink.accepted.length;
      const firstRequest = sink.requests.length;
      const run = await runProcess(bunBinary(), ['run', file], { SINK: sink.url, COUNT: '250' });
      assert.equal(run.code, 0, run.stderr);
      const out = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { runtime: string; ids: string[]; fetches: number };
      assert.match(out.runtime, /^bun \d/);
      assert.equal(out.ids.length, 250);
      const seen = countIds(sink.accepted.slice(firstAccepted));
      assert.equal(seen.size, 250);
      for (const id of out.ids) assert.equal(seen.get(id), 1, `messageId ${id} arrived ${seen.get(id) ?? 0} times`);
      const requests = sink.requests.slice(firstRequest);
      assert.ok(requests.length >= 13);
      assert.ok(requests.every((r) => r.headers['content-encoding'] === 'gzip'));
      assert.equal(out.fetches, c.viaFetch ? requests.length : 0, 'requests sent through fetch');
    });
  }
});
