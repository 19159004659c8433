import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { applyEnvironment, ConfigError, configFromObject, expandEnvironment, loadConfigFile } from '../../src/config/load.js';

const dir = mkdtempSync(join(tmpdir(), 'ferry-config-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

let counter = 0;
/** Writes `text` to `name` in a folder of its own (names repeat across cases) and returns its path. */
function file(name: string, text: string): string {
  const sub = join(dir, String(counter++));
  mkdirSync(sub);
  const path = join(sub, name);
  writeFileSync(path, text);
  return path;
}

const yamlConfig = `
sources:
  - id: backend
    name: Backend API
    writeKey: \${BACKEND_WRITE_KEY}
destinations:
  - id: crm-hooks
    type: Webhooks
    name: CRM webhooks
    enabled: true
    sources: [backend]
    settings:
      webhooks:
        - url: https://hooks.example.com/events
          headers: { X-Team: growth }
      sharedSecret: \${CRM_SECRET:-fallback-secret}
delivery:
  timeoutMs: 100
`;

/** Asserts that `fn` throws a ConfigError whose message contains every fragment. */
function assertConfigError(fn: () => unknown, ...fragments: (string | RegExp)[]): ConfigError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ConfigError, `expected a ConfigError, got ${String(caught)}`);
  for (const f of fragments) {
    if (typeof f === 'string') assert.ok(caught.message.includes(f), `message ${JSON.stringify(caught.message)} lacks ${JSON.stringify(f)}`);
    else assert.match(caught.message, f);
  }
  return caught;
}

describe('loadConfigFile', () => {
  it('L01 loads a YAML file, expanding ${VAR} and ${VAR:-default}', () => {
    const path = file('ferry.config.yaml', yamlConfig);
    const config = loadConfigFile(path, { BACKEND_WRITE_KEY: 'wk-from-env' });
    assert.equal(config.sources[0]?.writeKey, 'wk-from-env');
    assert.equal(config.destinations[0]?.settings.sharedSecret, 'fallback-secret');
    assert.equal(config.delivery.timeoutMs, 100);
    assert.equal(config.delivery.leaseMs, 12_000);
    assert.equal(config.delivery.leaseRenewIntervalMs, 4_000);
    assert.deepEqual(config.destinations[0]?.settings.webhooks[0]?.headers, { 'X-Team': 'growth' });
  });

  it('L02 a set variable wins over the default; an empty one takes the default', () => {
    const path = file('ferry.config.yml', yamlConfig);
    assert.equal(loadConfigFile(path, { BACKEND_WRITE_KEY: 'k', CRM_SECRET: 'real' }).destinations[0]?.settings.sharedSecret, 'real');
    assert.equal(loadConfigFile(path, { BACKEND_WRITE_KEY: 'k', CRM_SECRET: '' }).destinations[0]?.settings.sharedSecret, 'fallback-secret');
  });

  it('L03 loads a JSON file', () => {
    const path = file(
      'ferry.config.json',
      JSON.stringify({
        sources: [{ id: 'app', writeKey: '${APP_KEY:-app-key}' }],
        destinations: [{ id: 'd', type: 'Webhooks', sources: ['app'], settings: { webhookUrl: 'http://127.0.0.1:9000/x' } }],
      }),
    );
    const config = loadConfigFile(path, {});
    assert.deepEqual(config.sources, [{ id: 'app', name: 'app', writeKey: 'app-key' }]);
    assert.deepEqual(config.destinations[0]?.settings.webhooks, [{ url: 'http://127.0.0.1:9000/x', headers: {} }]);
  });

  it('L04 an unset variable without default names the variable, the file and the path', () => {
    const path = file('ferry.config.yaml', yamlConfig);
    const err = assertConfigError(() => loadConfigFile(path, {}), 'ferry.config.yaml: sources[0].writeKey: environment variable BACKEND_WRITE_KEY is not set');
    assert.equal(err.path, 'sources[0].writeKey');
  });

  it('L05 six URLs: the message names the file, the path and the rule', () => {
    const entries = Array.from({ length: 6 }, (_, i) => `        - url: https://hooks.example.com/${i}`).join('\n');
    const path = file(
      'ferry.config.yaml',
      `sources: [{ id: a, writeKey: k }]\ndestinations:\n  - id: d\n    type: Webhooks\n    sources: [a]\n    settings:\n      webhooks:\n${entries}\n`,
    );
    const err = assertConfigError(
      () => loadConfigFile(path, {}),
      /ferry\.config\.yaml: destinations\[0\]\.settings\.webhooks: at most 5 webhook URLs \(got 6\)$/,
    );
    assert.equal(err.issues.length, 1);
    assert.equal(err.file, path);
  });

  it('L06 every broken rule is listed, one per line', () => {
    const path = file(
      'ferry.config.yaml',
      `sources: [{ id: a, writeKey: k }]\ndestinations:\n  - id: d\n    type: Webhooks\n    sources: [a, nope]\n    settings:\n      webhooks:\n        - url: ftp://x/\n          headers: { Host: evil, X-A: "a\\r\\nb" }\n`,
    );
    const err = assertConfigError(
      () => loadConfigFile(path, {}),
      'destinations[0].settings.webhooks[0].url: must use the http:// or https:// protocol',
      'destinations[0].settings.webhooks[0].headers.Host: header "Host" cannot be set',
      'destinations[0].settings.webhooks[0].headers.X-A: header values must not contain CR, LF or NUL',
    );
    assert.equal(err.message.split('\n').length, err.issues.length);
    for (const line of err.message.split('\n')) assert.ok(line.startsWith(`${path}: `));
  });

  it('L07 an unknown source in a file', () => {
    const path = file(
      'ferry.config.yaml',
      `sources: [{ id: a, writeKey: k }]\ndestinations: [{ id: d, type: Webhooks, sources: [b], settings: { webhookUrl: "https://h/" } }]\n`,
    );
    assertConfigError(() => loadConfigFile(path, {}), 'ferry.config.yaml: destinations[0].sources[0]: unknown source "b"');
  });

  it('L08 a missing file', () => {
    assertConfigError(() => loadConfigFile(join(dir, 'nope', 'ferry.config.yaml'), {}), 'ferry.config.yaml: file not found');
  });

  it('L09 a YAML syntax error gives the line', () => {
    const path = file('ferry.config.yaml', 'sources:\n  - id: a\n    writeKey: k\n  bad: [unclosed\n');
    assertConfigError(() => loadConfigFile(path, {}), 'ferry.config.yaml: YAML syntax error at line ');
  });

  it('L10 a duplicate YAML key is an error', () => {
    const path = file('ferry.config.yaml', 'sources: []\nsources: []\n');
    assertConfigError(() => loadConfigFile(path, {}), /ferry\.config\.yaml: YAML syntax error at line 2/);
  });

  it('L11 a JSON syntax error gives the line', () => {
    const path = file('ferry.config.json', '{\n  "sources": [\n}\n');
    assertConfigError(() => loadConfigFile(path, {}), /ferry\.config\.json: JSON syntax error at line 3/);
    const leaky = file('ferry.config.json', '{"sources": [{"id": "a", "writeKey": "wk-must-not-leak" oops}]}');
    const err = assertConfigError(() => loadConfigFile(leaky, {}), 'JSON syntax error at line 1');
    assert.ok(!err.message.includes('wk-must-not-leak'));
  });

  it('L12 empty files', () => {
    for (const [name, text] of [
      ['ferry.config.yaml', ''],
      ['ferry.config.yaml', '# only a comment\n'],
      ['ferry.config.json', '  \n'],
    ] as const) {
      assertConfigError(() => loadConfigFile(file(name, text), {}), `${name}: the file is empty`);
    }
  });

  it('L13 an unsupported extension', () => {
    assertConfigError(() => loadConfigFile(file('ferry.toml', 'x = 1'), {}), 'ferry.toml: unsupported file extension ".toml"');
  });

  it('L14 a variable cannot inject YAML structure', () => {
    const path = file('ferry.config.yaml', 'sources:\n  - id: a\n    name: ${NAME}\n    writeKey: k\n');
    const injected = 'x\n  - id: b\n    writeKey: k2';
    const config = loadConfigFile(path, { NAME: injected });
    assert.equal(config.sources.length, 1);
    assert.equal(config.sources[0]?.name, injected);
  });

  it('L15 a top level that is a list', () => {
    assertConfigError(() => loadConfigFile(file('ferry.config.yaml', '- a\n- b\n'), {}), 'ferry.config.yaml: must be a mapping');
  });

  it('L15b a __proto__ key is an unknown key, not a prototype', () => {
    const path = file('ferry.config.json', '{"__proto__": {"sources": []}, "sources": []}');
    assertConfigError(() => loadConfigFile(path, {}), 'ferry.config.json: __proto__: unknown key');
  });

  it('L16 the repository root ferry.config.yaml loads', () => {
    const root = fileURLToPath(new URL('../../../../ferry.config.yaml', import.meta.url));
    const config = loadConfigFile(root, {});
    assert.deepEqual(config.sources, [{ id: 'demo', name: 'Demo app', writeKey: 'demo-write-key' }]);
    const d = config.destinations[0];
    assert.equal(d?.id, 'demo-webhooks');
    assert.equal(d?.type, 'Webhooks');
    assert.deepEqual(d?.sources, ['demo']);
    assert.deepEqual(d?.settings.webhooks, [{ url: 'http://127.0.0.1:9000/webhook', headers: { 'X-Team': 'demo' } }]);
    assert.equal(d?.settings.sharedSecret, 'demo-secret');
    assert.equal(config.network.allowPrivateNetworks, false);
    const overridden = loadConfigFile(root, { FERRY_DEMO_WRITE_KEY: 'wk-x', FERRY_DEMO_SECRET: 'sx', FERRY_ALLOW_PRIVATE_NETWORKS: '1' });
    assert.equal(overridden.sources[0]?.writeKey, 'wk-x');
    assert.equal(overridden.destinations[0]?.settings.sharedSecret, 'sx');
    assert.equal(overridden.network.allowPrivateNetworks, true);
  });
});

describe('${VAR} expansion', () => {
  const cases: { name: string; value: string; env: NodeJS.ProcessEnv; expected: string }[] = [
    { name: 'E01 plain value', value: 'abc', env: {}, expected: 'abc' },
    { name: 'E02 whole value', value: '${A}', env: { A: 'x' }, expected: 'x' },
    { name: 'E03 inside text', value: 'pre-${A}-post', env: { A: 'x' }, expected: 'pre-x-post' },
    { name: 'E04 default when unset', value: '${A:-d}', env: {}, expected: 'd' },
    { name: 'E05 default when empty', value: '${A:-d}', env: { A: '' }, expected: 'd' },
    { name: 'E06 empty default', value: '${A:-}', env: {}, expected: '' },
    { name: 'E07 set but empty, no default', value: '${A}', env: { A: '' }, expected: '' },
    { name: 'E08 default with spaces and colons', value: '${A:-http://h:1/x y}', env: {}, expected: 'http://h:1/x y' },
    { name: 'E09 two references', value: '${A}${B:-b}', env: { A: 'a' }, expected: 'ab' },
    { name: 'E10 $${ is a literal ${', value: '$${A}', env: { A: 'x' }, expected: '${A}' },
    { name: 'E11 a lone $ stays', value: 'co$t $5 $A', env: { A: 'x' }, expected: 'co$t $5 $A' },
    { name: 'E12 the value is not expanded again', value: '${A}', env: { A: '${B}', B: 'no' }, expected: '${B}' },
  ];
  for (const c of cases) {
    it(c.name, () => assert.deepEqual(expandEnvironment({ v: c.value }, c.env, 'f'), { v: c.expected }));
  }

  it('E13 keys, numbers and booleans are left alone; lists are walked', () => {
    assert.deepEqual(expandEnvironment({ '${A}': 1, b: true, c: ['${A}', null] }, { A: 'x' }, 'f'), { '${A}': 1, b: true, c: ['x', null] });
  });

  it('E14 malformed and unterminated references are errors with their paths', () => {
    assertConfigError(() => expandEnvironment({ a: { b: ['${A B}'] } }, {}, 'f.yaml'), 'f.yaml: a.b[0]: malformed reference ${…}');
    assertConfigError(() => expandEnvironment({ a: '${A' }, {}, 'f.yaml'), 'f.yaml: a: unterminated ${ reference');
  });

  it('E15 every unset variable is reported', () => {
    const err = assertConfigError(
      () => expandEnvironment({ a: '${X}', b: ['${Y}'] }, {}, 'f.yaml'),
      'a: environment variable X is not set',
      'b[0]: environment variable Y is not set',
    );
    assert.equal(err.issues.length, 2);
  });
});

describe('configFromObject', () => {
  it('validates without expanding unless asked to', () => {
    const obj = { sources: [{ id: 'a', writeKey: '${SECRET}' }] };
    assert.equal(configFromObject(obj, 'test').sources[0]?.writeKey, '${SECRET}');
    assert.equal(configFromObject(obj, 'test', { env: { SECRET: 's' } }).sources[0]?.writeKey, 's');
  });

  it('names its label in errors', () => {
    assertConfigError(() => configFromObject({ sources: 1 }, 'admin'), 'admin: sources: must be a list (got a number)');
  });
});

describe('applyEnvironment', () => {
  const config = configFromObject({}, 'test');
  const cases: { value: string | undefined; expected: boolean }[] = [
    { value: undefined, expected: false },
    { value: '', expected: false },
    { value: '1', expected: true },
    { value: 'true', expected: true },
    { value: 'TRUE', expected: true },
    { value: 'yes', expected: true },
    { value: '0', expected: false },
    { value: 'false', expected: false },
  ];
  for (const c of cases) {
    it(`FERRY_ALLOW_PRIVATE_NETWORKS=${JSON.stringify(c.value)} gives ${c.expected}`, () => {
      const env = c.value === undefined ? {} : { FERRY_ALLOW_PRIVATE_NETWORKS: c.value };
      assert.equal(applyEnvironment(config, env).network.allowPrivateNetworks, c.expected);
    });
  }

  it('0 turns off what the file turned on; unset keeps it', () => {
    const on = configFromObject({ network: { allowPrivateNetworks: true } }, 'test');
    assert.equal(applyEnvironment(on, { FERRY_ALLOW_PRIVATE_NETWORKS: '0' }).network.allowPrivateNetworks, false);
    assert.equal(applyEnvironment(on, {}).network.allowPrivateNetworks, true);
  });

  it('does not change its input', () => {
    applyEnvironment(config, { FERRY_ALLOW_PRIVATE_NETWORKS: '1' });
    assert.equal(config.network.allowPrivateNetworks, false);
  });

  it('refuses a value it does not understand', () => {
    assertConfigError(
      () => applyEnvironment(config, { FERRY_ALLOW_PRIVATE_NETWORKS: 'on' }),
      'FERRY_ALLOW_PRIVATE_NETWORKS: must be 1, true, yes, 0, false or no',
    );
  });
});

describe('a file that breaks several rules', () => {
  it('reports every broken rule, one line each, with the file and the path', () => {
    const entries = Array.from({ length: 6 }, (_, i) => `        - url: https://hooks.example.com/${i}`);
    entries[0] += `\n          headers: { ${Array.from({ length: 6 }, (_, i) => `X-H${i}: v${i}`).join(', ')} }`;
    const path = file(
      'ferry.config.yaml',
      `sources:\n  - id: app\n    writeKey: k1\n  - id: app\n    writeKey: k1\ndestinations:\n  - id: d\n    type: Webhooks\n    sources: [app, web]\n    settings:\n      webhooks:\n${entries.join('\n')}\n`,
    );
    const err = assertConfigError(() => loadConfigFile(path, {}));
    const lines = err.message.split('\n');
    assert.deepEqual(lines.map((line) => line.slice(path.length + 2).replace(/: .*$/, '')).sort(), [
      'destinations[0].settings.webhooks',
      'destinations[0].settings.webhooks[0].headers',
      'destinations[0].sources[1]',
      'sources[1].id',
      'sources[1].writeKey',
    ]);
    for (const line of lines) assert.ok(line.startsWith(`${path}: `), line);
    assert.match(err.message, /webhooks: at most 5 webhook URLs \(got 6\)/);
    assert.match(err.message, /headers: at most 5 headers per webhook \(got 6\)/);
    assert.match(err.message, /unknown source "web"/);
    assert.equal(err.issues.length, lines.length);
  });
});

describe('YAML errors never repeat a secret', () => {
  const secret = 'secret-9f8e7d6c';
  const cases: { name: string; yaml: string; path?: string; where: RegExp }[] = [
    {
      name: 'a write key beginning with * (an alias)',
      yaml: `sources:\n  - id: app\n    writeKey: *${secret}\n`,
      path: 'sources[0].writeKey',
      where: /line 3, column 15/,
    },
    {
      name: 'a shared secret beginning with * in a later destination',
      yaml: `sources:\n  - id: app\n    writeKey: k\ndestinations:\n  - id: d\n    type: Webhooks\n    sources: [app]\n    settings:\n      webhookUrl: https://h.example.com\n      sharedSecret: *${secret}\n`,
      path: 'destinations[0].settings.sharedSecret',
      where: /line 10/,
    },
    { name: 'a value beginning with an unknown tag', yaml: `sources:\n  - id: app\n    writeKey: !${secret}\n`, where: /line 3/ },
    { name: 'a bad escape in a double-quoted value', yaml: `sources:\n  - id: app\n    writeKey: "\\q${secret}"\n`, where: /line 3/ },
    {
      name: 'a header value holding ": "',
      yaml: `sources:\n  - id: app\n    writeKey: k\ndestinations:\n  - id: d\n    type: Webhooks\n    sources: [app]\n    settings:\n      webhooks:\n        - url: https://h.example.com\n          headers: { Authorization: Bearer: ${secret} }\n`,
      where: /line 11/,
    },
    { name: 'an unterminated quote', yaml: `sources:\n  - id: app\n    writeKey: "${secret}\n`, where: /line \d+/ },
    { name: 'a stray character after a quoted value', yaml: `sources:\n  - id: app\n    writeKey: "k" ${secret}\n`, where: /line 3/ },
    { name: 'a value beginning with a reserved character', yaml: `sources:\n  - id: app\n    writeKey: @${secret}\n`, where: /line 3/ },
    { name: 'a flow mapping left open', yaml: `sources:\n  - { id: app, writeKey: ${secret}\n`, where: /line \d+/ },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const err = assertConfigError(() => loadConfigFile(file('ferry.config.yaml', c.yaml), {}), c.where);
      assert.ok(!err.message.includes(secret.slice(0, 10)), `the secret leaked: ${err.message}`);
      if (c.path) assert.equal(err.path, c.path);
    });
  }

  it('a reference malformed inside a write key is reported without its text', () => {
    const err = assertConfigError(
      () => expandEnvironment({ sources: [{ writeKey: `ab\${${secret}}` }] }, {}, 'f.yaml'),
      'f.yaml: sources[0].writeKey: malformed reference',
    );
    assert.ok(!err.message.includes(secret.slice(0, 10)));
  });
});
