import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanups } from './cleanups.js';
import { freshSchema } from './postgres.js';
import { spawnFerry } from './spawn-ferry.js';

/** The secrets the `ferry config` tests' files reference, as their environment gives them. */
export const env = { APP_KEY: 'wk-cli-0123456789abcdef', HOOK_SECRET: 'cli-shared-secret', HOOK_TOKEN: 'cli-url-token' };

/** A directory of a test file's own for its configuration files and data; removed by `after`. */
export function configDir(after: (fn: () => void) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-config-cli-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Writes a file with its secrets as `${VAR}` references; `enabled` and `destinationName` vary it. */
export function configFile(dir: string, name: string, options: { enabled?: boolean; destinationName?: string } = {}): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    [
      'sources:',
      '  - id: app',
      '    name: App',
      '    writeKey: ${APP_KEY}',
      'destinations:',
      '  - id: crm-hooks',
      `    name: ${options.destinationName ?? 'CRM hooks'}`,
      '    type: Webhooks',
      `    enabled: ${options.enabled ?? true}`,
      '    sources: [app]',
      '    settings:',
      '      webhooks:',
      '        - url: https://hooks.example.com/in?token=${HOOK_TOKEN}',
      '      sharedSecret: ${HOOK_SECRET}',
      '',
    ].join('\n'),
  );
  return path;
}

/** Runs a `ferry` command to its end (at most 60 s). */
export async function run(args: string[], more: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const ferry = spawnFerry(args, more);
  const { code } = await ferry.waitForExit(60_000);
  return { code, output: ferry.output() };
}

/** Fails when a secret of {@link env} is in `text`. */
export function noSecretIn(text: string): void {
  for (const secret of Object.values(env)) assert.ok(!text.includes(secret), `${secret} leaked`);
}

/**
 * `ferry config plan` before the first start, `apply`, `plan` again (no changes; a rotated
 * secret listed, masked), `export`, then `apply` of the export with its variables set: a no-op.
 */
export async function planApplyExportRoundTrip(
  kind: 'sqlite' | 'postgres',
  dir: string,
  t: { after: (fn: () => Promise<void> | void) => void },
): Promise<void> {
  const onCleanup = cleanups(t);
  let storeEnv: Record<string, string>;
  if (kind === 'sqlite') storeEnv = { FERRY_DATA_DIR: join(dir, 'round-trip') };
  else {
    const { url, schema } = await freshSchema(onCleanup);
    storeEnv = { DATABASE_URL: url, FERRY_DATABASE_SCHEMA: schema };
  }
  const path = configFile(dir, `round-trip-${kind}.yaml`);
  const all = { ...env, ...storeEnv };
  const plan = await run(['config', 'plan', '--config', path], all);
  assert.equal(plan.code, 0, plan.output);
  assert.match(plan.output, /^\+ source app$/m);
  assert.match(plan.output, /^\+ destination crm-hooks$/m);
  assert.match(plan.output, /^Plan: 2 to create, 0 to update, 0 unchanged, 0 kept\.$/m);

  const apply = await run(['config', 'apply', '--config', path], all);
  assert.equal(apply.code, 0, apply.output);
  assert.match(apply.output, /^Applied: 2 created, 0 updated, 0 unchanged, 0 kept\.$/m);

  const disabled = configFile(dir, `round-trip-${kind}-disabled.yaml`, { enabled: false });
  const planned = await run(['config', 'plan', '--config', disabled, '--json'], all);
  assert.equal(planned.code, 0, planned.output);
  const answer = JSON.parse(planned.output.slice(planned.output.indexOf('{')));
  assert.deepEqual(answer.summary, { create: 0, update: 1, unchanged: 1, kept: 0 });
  assert.deepEqual(answer.changes[1].fields, [{ path: 'enabled', old: true, new: false }]);
  const rotated = await run(['config', 'plan', '--config', path], { ...all, HOOK_SECRET: 'another-secret' });
  assert.match(rotated.output, /^~ destination crm-hooks: settings\.sharedSecret: \[redacted\] -> \[redacted\] \(secret\)$/m);
  assert.match((await run(['config', 'plan', '--config', path], all)).output, /^No changes \(0 to create, 0 to update, 2 unchanged, 0 kept\)\.$/m);

  const out = join(dir, `exported-${kind}.yaml`);
  const exported = await run(['config', 'export', '--out', out], storeEnv);
  assert.equal(exported.code, 0, exported.output);
  assert.match(exported.output, /^ {2}FERRY_SOURCE_APP_WRITE_KEY {2}\(sources\[0\]\.writeKey\)$/m);
  assert.match(exported.output, /^ {2}FERRY_DESTINATION_CRM_HOOKS_SHARED_SECRET {2}\(destinations\[0\]\.settings\.sharedSecret\)$/m);
  const text = readFileSync(out, 'utf8');
  noSecretIn(text + exported.output + plan.output + apply.output + rotated.output);
  const values = {
    FERRY_SOURCE_APP_WRITE_KEY: env.APP_KEY,
    FERRY_DESTINATION_CRM_HOOKS_WEBHOOKS_0_URL: `https://hooks.example.com/in?token=${env.HOOK_TOKEN}`,
    FERRY_DESTINATION_CRM_HOOKS_SHARED_SECRET: env.HOOK_SECRET,
  };
  assert.equal((await run(['config', 'validate', '--config', out], values)).code, 0);
  const reapplied = await run(['config', 'apply', '--config', out, '--json'], { ...storeEnv, ...values });
  assert.equal(reapplied.code, 0, reapplied.output);
  const result = JSON.parse(reapplied.output.slice(reapplied.output.indexOf('{')));
  assert.deepEqual(result.summary, { create: 0, update: 0, unchanged: 2, kept: 0 });
  assert.equal(result.applied, true);
}
