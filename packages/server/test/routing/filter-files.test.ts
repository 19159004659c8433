/**
 * Filters and removals as an operator writes them: in a YAML file (the example of
 * docs/configuration.md), refused with the file, the path and the rule, and written back out by
 * `ferry config export` so that the export reads back as the same destination.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { ConfigError, loadConfigFile } from '../../src/config/load.js';
import { validateConfig } from '../../src/config/schema.js';
import { exportCatalog } from '../../src/control/catalog-export.js';
import { builtInDestinationTypes } from '../../src/destinations/registry.js';

const yaml = `
sources:
  - id: backend
    writeKey: \${BACKEND_WRITE_KEY}
destinations:
  - id: billing-hooks
    type: Webhooks
    sources: [backend]
    filter:
      allow:
        any:
          - event: { prefix: "Order " }
          - all:
              - type: identify
              - field: traits.plan
                in: [pro, enterprise]
      drop:
        any:
          - field: properties.test
            equals: true
          - field: context.app.version
            equals: "\${OLD_APP_VERSION}"
          - field: properties.total
            lt: 1
    removeFields: [properties.email, traits.email, traits.phone, context.ip]
    settings:
      webhookUrl: https://hooks.example.com/billing
      sharedSecret: \${BILLING_SECRET}
`;

function withFile(text: string, run: (path: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-filter-'));
  try {
    const path = join(dir, 'ferry.config.yaml');
    writeFileSync(path, text);
    run(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const env = { BACKEND_WRITE_KEY: 'wk-backend-0123456789', BILLING_SECRET: 'billing-secret-value', OLD_APP_VERSION: '1.0.0' };

test('a YAML file with a filter and removals loads; ${VAR} works inside a filter', () => {
  withFile(yaml, (path) => {
    const config = loadConfigFile(path, env);
    const d = config.destinations[0]!;
    assert.deepEqual(d.removeFields, ['properties.email', 'traits.email', 'traits.phone', 'context.ip']);
    assert.deepEqual(d.filter?.drop, {
      any: [
        { field: 'properties.test', equals: true },
        { field: 'context.app.version', equals: '1.0.0' },
        { field: 'properties.total', lt: 1 },
      ],
    });
  });
});

test('a bad clause in a YAML file is refused with the file, the path and the rule', () => {
  withFile(yaml.replace('lt: 1', 'lt: one'), (path) => {
    assert.throws(
      () => loadConfigFile(path, env),
      (error: unknown) =>
        error instanceof ConfigError && error.message.includes(`${path}: destinations[0].filter.drop.any[2].lt: must be a number (got a string`),
    );
  });
});

test('ferry config export writes the filter and removals out, and the export reads back as the same destination', () => {
  withFile(yaml, (path) => {
    const config = loadConfigFile(path, env);
    const exported = exportCatalog({ sources: config.sources, destinations: config.destinations }, builtInDestinationTypes, new Date(0));
    const values: Record<string, string> = {
      FERRY_SOURCE_BACKEND_WRITE_KEY: env.BACKEND_WRITE_KEY,
      FERRY_DESTINATION_BILLING_HOOKS_SHARED_SECRET: env.BILLING_SECRET,
    };
    assert.deepEqual(
      exported.variables.map((v) => v.name),
      Object.keys(values),
    );
    const text = exported.yaml.replace(/\$\{(\w+)\}/g, (_, name: string) => values[name]!);
    const again = validateConfig(parse(text));
    assert.ok(again.ok, JSON.stringify(again));
    assert.deepEqual(again.value.destinations, config.destinations);
  });
});
