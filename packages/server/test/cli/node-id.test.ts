import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { nodeIdFile, resolveNodeId } from '../../src/cli/node-id.js';

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-node-id-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('without FERRY_NODE_ID a node keeps a generated id in its data directory, the same at every start', (t) => {
  const dataDir = join(tempDir(t), 'data');
  const first = resolveNodeId(undefined, dataDir);
  assert.match(first, /^node-[0-9a-f-]{36}$/);
  assert.equal(readFileSync(join(dataDir, nodeIdFile), 'utf8'), first + '\n');
  assert.equal(resolveNodeId(undefined, dataDir), first, 'read back at the next start');
});

test('FERRY_NODE_ID wins over the file and writes nothing; a bad id, given or kept, stops the start', (t) => {
  const dataDir = tempDir(t);
  assert.equal(resolveNodeId('ferry-1', dataDir), 'ferry-1');
  assert.throws(() => readFileSync(join(dataDir, nodeIdFile)), /ENOENT/);
  assert.throws(() => resolveNodeId('a b', dataDir), /^Error: FERRY_NODE_ID must be 1 to 64 letters/);
  writeFileSync(join(dataDir, nodeIdFile), 'not an id\n');
  assert.throws(() => resolveNodeId(undefined, dataDir), /the node id in node-id of the data directory must be .*fix or delete the file/);
  // A data directory that cannot be created (its parent is a file): the error says what to do.
  assert.throws(
    () => resolveNodeId(undefined, join(dataDir, nodeIdFile, 'data')),
    /cannot keep this node's id in node-id of the data directory .*set FERRY_NODE_ID, or give a writable --data/,
  );
});
