/**
 * The destination fields of endpoint protection: `rateLimit` and `autoDisableAfterMs`, checked
 * as a table of (input, verdict), shown by the admin API and kept through a PATCH.
 */
import assert from 'node:assert/strict';
import { describe, it, test } from 'node:test';
import { validateDestination } from '../../src/config/schema.js';
import { FerryError } from '../../src/errors/error-codes.js';
import { cleanups } from '../helpers/cleanups.js';
import { startFerry, testConfig, webhooksDestination } from '../helpers/ferry.js';

const base = { id: 'hooks', type: 'Webhooks', sources: ['backend'], settings: { webhookUrl: 'https://h.example/x' } };

describe('rateLimit and autoDisableAfterMs', () => {
  const accepted: [string, Record<string, unknown>, Record<string, unknown>][] = [
    ['P01 absent: neither is stored', {}, {}],
    ['P02 burst defaults to a second’s worth', { rateLimit: { perSecond: 50 } }, { rateLimit: { perSecond: 50, burst: 50 } }],
    ['P03 a fraction per second, burst at least 1', { rateLimit: { perSecond: 0.5 } }, { rateLimit: { perSecond: 0.5, burst: 1 } }],
    [
      'P04 both given',
      { rateLimit: { perSecond: 10, burst: 3 }, autoDisableAfterMs: 600_000 },
      { rateLimit: { perSecond: 10, burst: 3 }, autoDisableAfterMs: 600_000 },
    ],
    ['P05 0 turns auto-disable off', { autoDisableAfterMs: 0 }, { autoDisableAfterMs: 0 }],
  ];
  for (const [name, extra, expected] of accepted)
    it(name, () => {
      const d = validateDestination({ ...base, ...extra }, ['backend']);
      assert.deepEqual(
        { rateLimit: d.rateLimit, autoDisableAfterMs: d.autoDisableAfterMs },
        { rateLimit: undefined, autoDisableAfterMs: undefined, ...expected },
      );
      assert.equal('rateLimit' in d, 'rateLimit' in expected, 'no key when absent, so a destination stores as it always did');
    });

  const refused: [string, Record<string, unknown>, string, RegExp][] = [
    ['P06 perSecond 0', { rateLimit: { perSecond: 0 } }, 'rateLimit.perSecond', /must be a number from/],
    ['P07 perSecond missing', { rateLimit: { burst: 3 } }, 'rateLimit.perSecond', /./],
    ['P08 burst not whole', { rateLimit: { perSecond: 1, burst: 1.5 } }, 'rateLimit.burst', /must be an integer from 1/],
    ['P09 an unknown key', { rateLimit: { perSecond: 1, perMinute: 60 } }, 'rateLimit.perMinute', /unknown key; allowed keys here: perSecond, burst/],
    ['P10 autoDisableAfterMs under 5 minutes', { autoDisableAfterMs: 60_000 }, 'autoDisableAfterMs', /must be 0 \(never\) or an integer from 300000/],
    ['P11 autoDisableAfterMs negative', { autoDisableAfterMs: -1 }, 'autoDisableAfterMs', /must be 0/],
  ];
  for (const [name, extra, path, message] of refused)
    it(name, () => {
      assert.throws(
        () => validateDestination({ ...base, ...extra }, ['backend']),
        (err: unknown) => err instanceof FerryError && err.code === 'invalid_settings' && err.path === path && message.test(err.message),
      );
    });
});

test('P12 the admin API shows both, a PATCH changes them, and a bad one is refused with its path', async (t) => {
  const onCleanup = cleanups(t);
  const ferry = await startFerry(
    testConfig([webhooksDestination('hooks', ['https://h.example/x'], { rateLimit: { perSecond: 5 }, autoDisableAfterMs: 3_600_000 })]),
    { deliver: false },
  );
  onCleanup(() => ferry.stop());
  const shown = (await ferry.admin('GET', '/destinations/hooks')).json;
  assert.deepEqual(shown.rateLimit, { perSecond: 5, burst: 5 });
  assert.equal(shown.autoDisableAfterMs, 3_600_000);
  const patched = await ferry.admin('PATCH', '/destinations/hooks', { rateLimit: { perSecond: 1, burst: 2 }, autoDisableAfterMs: null });
  assert.equal(patched.status, 200);
  assert.deepEqual(patched.json.rateLimit, { perSecond: 1, burst: 2 });
  assert.equal('autoDisableAfterMs' in patched.json, false, 'null in a merge patch removes it: the default applies');
  assert.deepEqual(ferry.ferry.catalog.destination('hooks')!.rateLimit, { perSecond: 1, burst: 2 });
  const bad = await ferry.admin('PATCH', '/destinations/hooks', { rateLimit: { perSecond: -1 } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.errors[0].code, 'invalid_settings');
  assert.equal(bad.json.errors[0].path, 'rateLimit.perSecond');
});
