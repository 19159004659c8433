import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { once } from 'node:events';
import pino from 'pino';
import { createFerry } from '../../src/app.js';
import { configFromObject } from '../../src/config/load.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { cleanups } from '../helpers/cleanups.js';
import { configDir, configFile, env, planApplyExportRoundTrip, run } from '../helpers/config-cli.js';
import { adminToken } from '../helpers/ferry.js';
import { freshSchema, stopPostgres } from '../helpers/postgres.js';
import { within } from '../helpers/within.js';

const dir = configDir(after);
after(() => stopPostgres());

describe('ferry config plan, apply and export (postgres)', () => {
  test('plan before the first start, apply, plan again: no changes; export then apply with its variables set: a no-op', (t) =>
    planApplyExportRoundTrip('postgres', dir, t));

  test('PostgreSQL: an apply through the store reaches a running node at its next catalogue refresh', async (t) => {
    const onCleanup = cleanups(t);
    const { url, schema } = await freshSchema(onCleanup);
    const clock = new ManualClock();
    const refreshMs = 5000;
    const config = configFromObject(
      {
        sources: [{ id: 'app', name: 'App', writeKey: env.APP_KEY }],
        destinations: [
          {
            id: 'crm-hooks',
            name: 'CRM hooks',
            type: 'Webhooks',
            sources: ['app'],
            settings: { webhooks: [{ url: `https://hooks.example.com/in?token=${env.HOOK_TOKEN}` }], sharedSecret: env.HOOK_SECRET },
          },
        ],
      },
      'test config',
    );
    const node = await createFerry({
      config,
      store: await PgStore.open({ connectionString: url, schema }),
      adminToken,
      logger: pino({ level: 'silent' }),
      clock,
      catalogRefreshMs: refreshMs,
      deliver: false,
    });
    onCleanup(() => node.stop());
    await node.start(0, '127.0.0.1');
    const applied = await run(['config', 'apply', '--config', configFile(dir, 'cluster.yaml', { enabled: false })], {
      ...env,
      DATABASE_URL: url,
      FERRY_DATABASE_SCHEMA: schema,
    });
    assert.equal(applied.code, 0, applied.output);
    assert.match(applied.output, /^~ destination crm-hooks: enabled: true -> false$/m);
    assert.equal(node.catalog.destination('crm-hooks')?.enabled, true, 'not before its next refresh');
    const reloaded = once(node.catalog, 'catalog:reloaded');
    clock.advance(refreshMs);
    await within(10_000, 'the catalogue refresh', reloaded);
    assert.equal(node.catalog.destination('crm-hooks')?.enabled, false);
  });
});
