/**
 * The environment is read in one place: `cli/` reads it once into validated settings, and
 * the rest of the server is handed what it needs.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { httpLimitsFrom, minBodyBudgetBytes, readSettings } from '../../src/cli/settings.js';

const src = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

test('nothing outside src/cli/ reads process.env', () => {
  const readers = sources(src)
    .filter((file) => !relative(src, file).startsWith(`cli/`))
    .filter((file) => /process\s*(\.\s*env\b|\[\s*['"`]env['"`]\s*\])/.test(readFileSync(file, 'utf8')))
    .map((file) => relative(src, file));
  assert.deepEqual(readers, []);
});

describe('readSettings', () => {
  test('defaults when nothing is set; an empty variable counts as unset', () => {
    const settings = readSettings({}, { PORT: '', FERRY_LOG_LEVEL: '', FERRY_TRUST_PROXY: '' });
    assert.equal(settings.port, 8080);
    assert.equal(settings.host, '0.0.0.0');
    assert.equal(settings.drainMs, 5000);
    assert.equal(settings.logLevel, 'info');
    assert.equal(settings.trustProxy, false);
    assert.equal(settings.metricsPublic, false);
    assert.equal(settings.databaseUrl, undefined);
    assert.deepEqual(settings.http, {});
    assert.equal(settings.dataDir, resolve('./.ferry'));
    assert.equal(settings.admin, undefined);
    assert.equal(settings.nodeId, undefined);
  });

  test('the environment is read, and a flag wins over its variable', () => {
    const env = {
      PORT: '9001',
      HOST: '127.0.0.2',
      FERRY_DRAIN_MS: '10',
      FERRY_CONFIG: 'from-env.yaml',
      FERRY_DATA_DIR: 'env-data',
      DATABASE_URL: 'postgres://127.0.0.1/ferry',
      FERRY_DATABASE_SCHEMA: 'ferry_a',
      FERRY_ADMIN_TOKEN: 'a-token-of-at-least-32-characters!',
      FERRY_LOG_LEVEL: 'Debug',
      FERRY_TRUST_PROXY: 'yes',
      FERRY_METRICS_PUBLIC: '1',
      FERRY_MAX_CONNECTIONS_PER_ADDRESS: '7',
      FERRY_ADMIN_PORT: '9100',
      FERRY_NODE_ID: 'node-a.1',
    };
    const fromEnv = readSettings({}, env);
    assert.deepEqual(
      { ...fromEnv },
      {
        configPath: resolve('from-env.yaml'),
        port: 9001,
        host: '127.0.0.2',
        drainMs: 10,
        dataDir: resolve('env-data'),
        databaseUrl: 'postgres://127.0.0.1/ferry',
        databaseSchema: 'ferry_a',
        adminToken: 'a-token-of-at-least-32-characters!',
        nodeId: 'node-a.1',
        logLevel: 'debug',
        trustProxy: true,
        metricsPublic: true,
        http: { maxConnectionsPerAddress: 7 },
        admin: { port: 9100, host: '127.0.0.1' },
      },
    );
    const flagged = readSettings({ port: '9002', host: '127.0.0.3', drainMs: '0', config: 'flag.yaml', data: 'flag-data' }, env);
    assert.deepEqual(
      [flagged.port, flagged.host, flagged.drainMs, flagged.configPath, flagged.dataDir],
      [9002, '127.0.0.3', 0, resolve('flag.yaml'), resolve('flag-data')],
    );
    const admin = readSettings({ adminPort: '9200', adminHost: '10.0.0.5' }, { ...env, FERRY_ADMIN_HOST: '127.0.0.9' }).admin;
    assert.deepEqual(admin, { port: 9200, host: '10.0.0.5' });
    assert.deepEqual(readSettings({}, { FERRY_ADMIN_PORT: '9100', FERRY_ADMIN_HOST: '::1' }).admin, { port: 9100, host: '::1' });
  });

  test('a value that is not understood stops the start, naming its variable', () => {
    for (const [env, message] of [
      [{ PORT: 'eighty' }, /^port must be an integer from 0 to 65535 \(got eighty\)$/],
      [{ FERRY_DRAIN_MS: '-1' }, /FERRY_DRAIN_MS\) must be an integer from 0 to 300000 ms/],
      [{ FERRY_LOG_LEVEL: 'verbose' }, /^FERRY_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent \(got "verbose"\)$/],
      [{ FERRY_TRUST_PROXY: 'on' }, /^FERRY_TRUST_PROXY must be 1, true, yes, 0, false or no \(got "on"\)$/],
      [{ FERRY_METRICS_PUBLIC: 'open' }, /^FERRY_METRICS_PUBLIC must be 1, true, yes, 0, false or no \(got "open"\)$/],
      [{ FERRY_INGEST_BODY_BUDGET_BYTES: '64MiB' }, /^FERRY_INGEST_BODY_BUDGET_BYTES must be an integer/],
      [{ FERRY_ADMIN_PORT: 'nine' }, /^the admin port \(--admin-port, FERRY_ADMIN_PORT\) must be an integer from 0 to 65535 \(got nine\)$/],
      [{ FERRY_ADMIN_PORT: '8080' }, /^the admin port \(--admin-port, FERRY_ADMIN_PORT\) must differ from the port \(8080\)$/],
      [{ FERRY_NODE_ID: 'node a' }, /^FERRY_NODE_ID must be 1 to 64 letters, digits, "\.", "_" or "-", starting with a letter or digit \(got "node a"\)$/],
      [{ FERRY_NODE_ID: '-a' }, /^FERRY_NODE_ID must be/],
      [{ FERRY_NODE_ID: 'n'.repeat(65) }, /^FERRY_NODE_ID must be/],
      [{ FERRY_ADMIN_HOST: '127.0.0.1' }, /^the admin host \(--admin-host, FERRY_ADMIN_HOST\) needs an admin port/],
    ] as const)
      assert.throws(
        () => readSettings({}, env),
        (error: Error) => message.test(error.message),
        JSON.stringify(env),
      );
    assert.equal(readSettings({}, { FERRY_TRUST_PROXY: 'false' }).trustProxy, false);
  });
});

test('the environment sets both HTTP limits; a bad value stops the start naming the variable', () => {
  assert.deepEqual(httpLimitsFrom({}), {});
  assert.deepEqual(httpLimitsFrom({ FERRY_MAX_CONNECTIONS_PER_ADDRESS: '0', FERRY_INGEST_BODY_BUDGET_BYTES: ' 8388608 ' }), {
    maxConnectionsPerAddress: 0,
    ingestBodyBudgetBytes: 8_388_608,
  });
  assert.deepEqual(httpLimitsFrom({ FERRY_MAX_CONNECTIONS_PER_ADDRESS: '', FERRY_INGEST_BODY_BUDGET_BYTES: '' }), {});
  for (const [name, value] of [
    ['FERRY_MAX_CONNECTIONS_PER_ADDRESS', '-1'],
    ['FERRY_MAX_CONNECTIONS_PER_ADDRESS', '10.5'],
    ['FERRY_MAX_CONNECTIONS_PER_ADDRESS', 'many'],
    ['FERRY_INGEST_BODY_BUDGET_BYTES', '64MiB'],
    ['FERRY_INGEST_BODY_BUDGET_BYTES', String(minBodyBudgetBytes - 1)],
  ] as const)
    assert.throws(() => httpLimitsFrom({ [name]: value }), new RegExp(`^Error: ${name} must be an integer`), `${name}=${value}`);
});
