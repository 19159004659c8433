import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { configFromObject, loadConfigFile } from '../../src/config/load.js';
import type { DestinationConfig, SourceConfig } from '../../src/config/model.js';
import { appliedConfigOf } from '../../src/control/applied-config.js';
import { exportCatalog } from '../../src/control/catalog-export.js';
import { planCatalog } from '../../src/control/catalog-plan.js';
import { catalogHash } from '../../src/control/config-hash.js';
import type { DestinationType } from '../../src/destinations/destination-type.js';
import { builtInDestinationTypes, createDestinationRegistry } from '../../src/destinations/registry.js';
import { FerryError } from '../../src/errors/error-codes.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const types = builtInDestinationTypes;
const app: SourceConfig = { id: 'app', name: 'App', writeKey: 'wk-app-0123456789abcdef' };
const hooks = (over: Partial<DestinationConfig> = {}, settings: Record<string, unknown> = {}): DestinationConfig => ({
  id: 'crm-hooks',
  type: 'Webhooks',
  name: 'CRM hooks',
  enabled: true,
  sources: ['app'],
  settings: {
    webhooks: [{ url: 'https://hooks.example.com/in?token=url-secret', headers: { Authorization: 'Bearer header-secret' } }],
    sharedSecret: 'shared-secret-1',
    ...settings,
  },
  ...over,
});

describe('planCatalog', () => {
  test('an empty store: every object is created, its fields listed with secrets masked', () => {
    const changes = planCatalog({ sources: [], destinations: [] }, { sources: [app], destinations: [hooks()] }, { types });
    assert.deepEqual(
      changes.map((c) => [c.action, c.kind, c.id]),
      [
        ['create', 'source', 'app'],
        ['create', 'destination', 'crm-hooks'],
      ],
    );
    assert.deepEqual(changes[0]!.fields, [
      { path: 'id', new: 'app' },
      { path: 'name', new: 'App' },
      { path: 'writeKey', new: '[redacted]', secret: true },
    ]);
    const byPath = new Map(changes[1]!.fields.map((f) => [f.path, f]));
    assert.deepEqual(byPath.get('settings.webhooks[0].url'), {
      path: 'settings.webhooks[0].url',
      new: 'https://hooks.example.com/in?token=[redacted]',
      secret: true,
    });
    assert.deepEqual(byPath.get('settings.webhooks[0].headers.Authorization'), {
      path: 'settings.webhooks[0].headers.Authorization',
      new: '[redacted]',
      secret: true,
    });
    assert.deepEqual(byPath.get('settings.sharedSecret'), { path: 'settings.sharedSecret', new: '[redacted]', secret: true });
    assert.deepEqual(byPath.get('sources'), { path: 'sources', new: ['app'] });
    const text = JSON.stringify(changes);
    for (const secret of ['wk-app-0123456789abcdef', 'url-secret', 'header-secret', 'shared-secret-1']) assert.ok(!text.includes(secret), secret);
  });

  // A numbered table: the stored destination, the desired one, the fields the plan names.
  const cases: [string, DestinationConfig, DestinationConfig, { action: string; fields: object[] }][] = [
    [
      'P01 the same object, keys in another order',
      hooks(),
      JSON.parse(JSON.stringify({ ...hooks(), id: 'crm-hooks' })) as DestinationConfig,
      { action: 'unchanged', fields: [] },
    ],
    ['P02 a flag', hooks(), hooks({ enabled: false }), { action: 'update', fields: [{ path: 'enabled', old: true, new: false }] }],
    ['P03 a list of ids, shown whole', hooks({ sources: [] }), hooks(), { action: 'update', fields: [{ path: 'sources', old: [], new: ['app'] }] }],
    [
      'P04 a URL: its query values masked, the change still listed',
      hooks(),
      hooks({}, { webhooks: [{ url: 'https://hooks.example.com/in?token=other-secret', headers: { Authorization: 'Bearer header-secret' } }] }),
      {
        action: 'update',
        fields: [
          {
            path: 'settings.webhooks[0].url',
            old: 'https://hooks.example.com/in?token=[redacted]',
            new: 'https://hooks.example.com/in?token=[redacted]',
            secret: true,
          },
        ],
      },
    ],
    [
      'P05 a public URL shown as it is',
      hooks({}, { webhooks: [{ url: 'https://a.example.com/x', headers: {} }] }),
      hooks({}, { webhooks: [{ url: 'https://b.example.com/x', headers: {} }] }),
      { action: 'update', fields: [{ path: 'settings.webhooks[0].url', old: 'https://a.example.com/x', new: 'https://b.example.com/x' }] },
    ],
    [
      'P06 a second webhook added: its fields, masked',
      hooks({}, { webhooks: [{ url: 'https://a.example.com/x', headers: {} }] }),
      hooks(
        {},
        {
          webhooks: [
            { url: 'https://a.example.com/x', headers: {} },
            { url: 'https://b.example.com/y', headers: { 'X-Key': 'k-secret' } },
          ],
        },
      ),
      {
        action: 'update',
        fields: [
          { path: 'settings.webhooks[1].url', new: 'https://b.example.com/y' },
          { path: 'settings.webhooks[1].headers.X-Key', new: '[redacted]', secret: true },
        ],
      },
    ],
    [
      'P07 the shared secret removed',
      hooks(),
      hooks({}, { sharedSecret: undefined }),
      { action: 'update', fields: [{ path: 'settings.sharedSecret', old: '[redacted]', secret: true }] },
    ],
  ];
  for (const [name, stored, desired, expected] of cases) {
    test(name, () => {
      const [, change] = planCatalog({ sources: [app], destinations: [stored] }, { sources: [app], destinations: [desired] }, { types });
      assert.equal(change!.action, expected.action);
      assert.deepEqual(change!.fields, expected.fields);
    });
  }

  test('an object edited since the last configuration was applied is flagged; one the last configuration named and this one does not is kept', () => {
    const old = hooks({ id: 'old-hooks' });
    const applied = appliedConfigOf({ sources: [app], destinations: [hooks(), old] }, 0);
    const stored = { sources: [app], destinations: [hooks({ enabled: false }), old] };
    const changes = planCatalog(stored, { sources: [app], destinations: [hooks()] }, { types, applied });
    assert.deepEqual(
      changes.map((c) => [c.action, c.kind, c.id, c.overridesEdit ?? false]),
      [
        ['unchanged', 'source', 'app', false],
        ['update', 'destination', 'crm-hooks', true],
        ['kept', 'destination', 'old-hooks', false],
      ],
    );
    // The same update with the store as the last configuration left it overrides no edit.
    const fromFile = planCatalog(
      { sources: [app], destinations: [hooks()] },
      { sources: [app], destinations: [hooks({ enabled: false })] },
      { types, applied },
    );
    assert.equal(fromFile[1]!.overridesEdit, undefined);
  });

  test('a source taking the write key of a stored source the configuration does not name is a conflict', () => {
    const stored = { sources: [{ id: 'made-by-api', name: 'API', writeKey: app.writeKey }], destinations: [] };
    assert.throws(
      () => planCatalog(stored, { sources: [app], destinations: [] }, { types }),
      (e: unknown) => e instanceof FerryError && e.code === 'conflict' && e.path === 'sources[0].writeKey' && !e.message.includes(app.writeKey),
    );
    // Named by the configuration too, the other source gives the key up in the same apply.
    const renamed = { id: 'made-by-api', name: 'API', writeKey: 'another-key-0123456789' };
    assert.doesNotThrow(() => planCatalog(stored, { sources: [app, renamed], destinations: [] }, { types }));
  });

  test("a type's settings its redaction does not show are masked whatever they are called", () => {
    const vault: DestinationType<{ path: string; token: string }> = {
      type: 'Vault',
      settingsSchema: z.strictObject({ path: z.string(), token: z.string() }),
      renderMessage: () => '',
      redactSettings: (s) => ({ path: s.path }),
      attempt: async () => [],
    };
    const registry = createDestinationRegistry([vault]);
    const d = (token: string): DestinationConfig => ({ id: 'v', type: 'Vault', name: 'v', enabled: true, sources: [], settings: { path: '/p', token } });
    const [change] = planCatalog({ sources: [], destinations: [d('t-1')] }, { sources: [], destinations: [d('t-2')] }, { types: registry });
    assert.deepEqual(change!.fields, [{ path: 'settings.token', old: '[redacted]', new: '[redacted]', secret: true }]);
  });
});

describe('catalogHash', () => {
  test('the resolved configuration counts: a secret from the environment does, the order of entries and the way a value is written do not', () => {
    const file = {
      sources: [
        { id: 'b', writeKey: 'key-b-0123456789' },
        { id: 'a', writeKey: '${KEY_A}' },
      ],
      destinations: [{ id: 'd', type: 'Webhooks', sources: ['a'], settings: { webhookUrl: 'https://h.example.com/x' } }],
    };
    const hash = (obj: object, env: NodeJS.ProcessEnv) => catalogHash(configFromObject(obj, 'test', { env }));
    const base = hash(file, { KEY_A: 'key-a-0123456789' });
    assert.equal(hash(file, { KEY_A: 'key-a-0123456789' }), base);
    assert.notEqual(hash(file, { KEY_A: 'key-a-rotated-0123' }), base, 'a secret changed in the environment is a change');
    const reordered = { ...file, sources: [...file.sources].reverse() };
    assert.equal(hash(reordered, { KEY_A: 'key-a-0123456789' }), base, 'the order of entries is not');
    const longForm = {
      ...file,
      destinations: [{ id: 'd', type: 'Webhooks', name: 'd', enabled: true, sources: ['a'], settings: { webhooks: [{ url: 'https://h.example.com/x' }] } }],
    };
    assert.equal(hash(longForm, { KEY_A: 'key-a-0123456789' }), base, 'nor the form of a value that validates to the same');
    // Tuning sections are not the store's: they do not count.
    assert.equal(hash({ ...file, delivery: { timeoutMs: 1000, leaseMs: 10_000 } }, { KEY_A: 'key-a-0123456789' }), base);
  });
});

describe('exportCatalog', () => {
  test('secrets become predictable placeholders; the file read back with them set is the catalogue, literal ${ included', () => {
    const stored = {
      sources: [app, { id: 'a-b', name: 'costs ${X}', writeKey: 'k1-0123456789' }, { id: 'a_b', name: 'A_B', writeKey: 'k2-0123456789' }],
      destinations: [
        hooks(),
        hooks({ id: 'plain', name: 'Plain', sources: [] }, { webhooks: [{ url: 'https://p.example.com/$${raw}', headers: {} }], sharedSecret: undefined }),
      ],
    };
    // The second is stored without a shared secret: JSON drops undefined.
    stored.destinations[1] = JSON.parse(JSON.stringify(stored.destinations[1])) as DestinationConfig;
    const out = exportCatalog(stored, types, new Date(0));
    assert.deepEqual(
      out.variables.map((v) => [v.name, v.path]),
      [
        ['FERRY_SOURCE_APP_WRITE_KEY', 'sources[0].writeKey'],
        ['FERRY_SOURCE_A_B_WRITE_KEY', 'sources[1].writeKey'],
        ['FERRY_SOURCE_A_B_WRITE_KEY_2', 'sources[2].writeKey'],
        ['FERRY_DESTINATION_CRM_HOOKS_WEBHOOKS_0_URL', 'destinations[0].settings.webhooks[0].url'],
        ['FERRY_DESTINATION_CRM_HOOKS_WEBHOOKS_0_HEADERS_AUTHORIZATION', 'destinations[0].settings.webhooks[0].headers.Authorization'],
        ['FERRY_DESTINATION_CRM_HOOKS_SHARED_SECRET', 'destinations[0].settings.sharedSecret'],
      ],
    );
    for (const secret of ['wk-app-0123456789abcdef', 'k1-0123456789', 'url-secret', 'header-secret', 'shared-secret-1'])
      assert.ok(!out.yaml.includes(secret), secret);
    const dir = mkdtempSync(join(tmpdir(), 'ferry-export-'));
    try {
      const path = join(dir, 'exported.yaml');
      writeFileSync(path, out.yaml);
      const env = {
        FERRY_SOURCE_APP_WRITE_KEY: app.writeKey,
        FERRY_SOURCE_A_B_WRITE_KEY: 'k1-0123456789',
        FERRY_SOURCE_A_B_WRITE_KEY_2: 'k2-0123456789',
        FERRY_DESTINATION_CRM_HOOKS_WEBHOOKS_0_URL: 'https://hooks.example.com/in?token=url-secret',
        FERRY_DESTINATION_CRM_HOOKS_WEBHOOKS_0_HEADERS_AUTHORIZATION: 'Bearer header-secret',
        FERRY_DESTINATION_CRM_HOOKS_SHARED_SECRET: 'shared-secret-1',
      };
      const config = loadConfigFile(path, env);
      const changes = planCatalog(stored, config, { types });
      assert.deepEqual(
        changes.map((c) => c.action),
        ['unchanged', 'unchanged', 'unchanged', 'unchanged', 'unchanged'],
      );
      assert.equal(config.sources[1]!.name, 'costs ${X}');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
