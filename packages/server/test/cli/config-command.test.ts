import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { configDir, configFile, env, planApplyExportRoundTrip, run } from '../helpers/config-cli.js';

const dir = configDir(after);

describe('ferry config validate', () => {
  test('a good file: valid, naming what it holds; a bad one: status 1, one line per broken rule; no store is needed', async () => {
    const good = await run(['config', 'validate', '--config', configFile(dir, 'good.yaml')], { ...env, FERRY_DATA_DIR: join(dir, 'never-made') });
    assert.equal(good.code, 0, good.output);
    assert.match(good.output, /good\.yaml: valid; 1 source \(app\), 1 destination \(crm-hooks\)$/m);
    const path = join(dir, 'bad.yaml');
    writeFileSync(
      path,
      'sources:\n  - id: App\n    writeKey: ${MISSING_KEY}\ndestinations:\n  - id: d\n    type: webhooks\n    sources: []\n    settings: {}\n',
    );
    const bad = await run(['config', 'validate', '--config', path], {});
    assert.equal(bad.code, 1);
    assert.match(bad.output, /^ferry: invalid configuration: \S*bad\.yaml: sources\[0\]\.writeKey: environment variable MISSING_KEY is not set/m);
    const typo = join(dir, 'typo.yaml');
    writeFileSync(typo, 'sources:\n  - id: App\n    writeKey: k\n');
    const rule = await run(['config', 'validate', '--config', typo], {});
    assert.equal(rule.code, 1);
    assert.match(rule.output, /typo\.yaml: sources\[0\]\.id: must match \[a-z0-9_-\]\+/);
  });
});

describe('ferry config plan, apply and export (sqlite)', () => {
  test('plan before the first start, apply, plan again: no changes; export then apply with its variables set: a no-op', (t) =>
    planApplyExportRoundTrip('sqlite', dir, t));
});
