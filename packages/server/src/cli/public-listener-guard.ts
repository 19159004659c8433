import { isIP } from 'node:net';
import { demoWriteKey } from '../config/defaults.js';
import type { SourceConfig } from '../config/model.js';

/** Whether a bind address is reachable from this machine only. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  return bare === '::1' || bare.startsWith('::ffff:127.');
}

/**
 * Why `ferry serve` must not listen on `host` with these sources, or undefined when it may:
 * the demo's write key is published in the repository, so a source holding it accepts events
 * from anyone who can reach the port. Sources are those in force (the store's, the file's
 * applied), since one created by an earlier demo run stays in the store.
 */
export function publicDemoKeyProblem(host: string, sources: readonly SourceConfig[]): string | undefined {
  if (isLoopbackHost(host)) return undefined;
  const demo = sources.filter((s) => s.writeKey === demoWriteKey).map((s) => JSON.stringify(s.id));
  if (demo.length === 0) return undefined;
  return (
    `refusing to listen on ${host}: source ${demo.join(', ')} uses the demo configuration's write key, which is public. ` +
    'Give it a key of its own (set FERRY_DEMO_WRITE_KEY for the demo file, change writeKey in your file, or PUT /admin/v1/sources/{id}), ' +
    'or listen on this machine only with --host 127.0.0.1'
  );
}
