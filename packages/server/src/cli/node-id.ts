import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A node id: a letter or digit, then letters, digits, `.`, `_` or `-`; at most 64 in all. */
const nodeIdPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The file of the data directory that keeps a node's generated id. */
export const nodeIdFile = 'node-id';

/** Why a node id is refused, or undefined. */
function nodeIdProblem(id: string): string | undefined {
  return nodeIdPattern.test(id) ? undefined : 'must be 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit';
}

/**
 * `FERRY_NODE_ID` as given, if it is a valid node id; throws saying what is wrong otherwise.
 * The settings check it as they read the environment, and {@link resolveNodeId} again when
 * given it, so neither can let a bad id through.
 */
export function checkedNodeIdFromEnv(text: string): string {
  const problem = nodeIdProblem(text);
  if (problem) throw new Error(`FERRY_NODE_ID ${problem} (got ${JSON.stringify(text)})`);
  return text;
}

/**
 * This node's id: `FERRY_NODE_ID` when set, else the one kept in `<dataDir>/node-id`, written
 * with a random id at the first start. The same id after a restart is what lets a node take
 * back at once the delivery leases it held when it died (see docs/operations.md).
 */
export function resolveNodeId(fromEnv: string | undefined, dataDir: string): string {
  if (fromEnv !== undefined) return checkedNodeIdFromEnv(fromEnv);
  const path = join(dataDir, nodeIdFile);
  let kept: string | undefined;
  try {
    kept = readFileSync(path, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw unkeptId(error);
  }
  if (kept !== undefined) {
    const problem = nodeIdProblem(kept);
    if (problem) throw new Error(`the node id in ${nodeIdFile} of the data directory ${problem}; fix or delete the file (got ${JSON.stringify(kept)})`);
    return kept;
  }
  const id = `node-${randomUUID()}`;
  // 'wx': two processes starting on one directory at once keep whichever id was written first.
  try {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(path, id + '\n', { flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return resolveNodeId(undefined, dataDir);
    throw unkeptId(error);
  }
  return id;
}

function unkeptId(error: unknown): Error {
  const reason = error instanceof Error ? error.message : String(error);
  return new Error(`cannot keep this node's id in ${nodeIdFile} of the data directory (${reason}); set FERRY_NODE_ID, or give a writable --data`);
}
