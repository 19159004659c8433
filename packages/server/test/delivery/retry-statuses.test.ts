/**
 * `retryStatuses` per destination: which statuses are retried is the destination's list (by
 * default 408, 429 and every 5xx), as a table of cases, end to end with a real receiver, and
 * validated (with the breaker's settings) with the path of the bad entry.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validateConfig } from '../../src/config/schema.js';
import { defaultRetryable, isRetryable, retryableStatuses } from '../../src/delivery/retry-policy.js';
import type { ExchangeResult } from '../../src/model/attempt.js';
import { ManualClock } from '../../src/util/clock.js';
import { startFerry, testConfig, webhooksDestination } from '../helpers/ferry.js';
import { startReceiver } from '../helpers/receiver.js';

const at = (statusCode: number): ExchangeResult => ({ url: 'https://x.example/h', startedAtMs: 0, latencyMs: 1, statusCode, errorClass: 'http' });

describe('retryStatuses', () => {
  const custom = retryableStatuses([404, 409, '5xx']);
  const cases: [string, number, boolean, boolean][] = [
    // [case, status, retried by default, retried by [404, 409, "5xx"]]
    ['R01 408', 408, true, false],
    ['R02 429', 429, true, false],
    ['R03 500', 500, true, true],
    ['R04 599', 599, true, true],
    ['R05 404', 404, false, true],
    ['R06 409', 409, false, true],
    ['R07 400', 400, false, false],
    ['R08 302', 302, false, false],
  ];
  for (const [name, status, byDefault, byCustom] of cases)
    test(name, () => {
      assert.equal(isRetryable(at(status), defaultRetryable), byDefault);
      assert.equal(isRetryable(at(status), custom), byCustom);
    });

  test('R09 a class covers its hundred statuses; a circuit skipped is always retryable', () => {
    const fourxx = retryableStatuses(['4xx']);
    assert.deepEqual(
      [399, 400, 499, 500].map((s) => isRetryable(at(s), fourxx)),
      [false, true, true, false],
    );
    assert.equal(isRetryable({ url: 'u', startedAtMs: 0, latencyMs: 0, errorClass: 'circuit_open' }, retryableStatuses([])), true);
  });

  test('R10 a destination that lists 404 retries it; a 429 it does not list dead-letters at once', async (t) => {
    const receiver = await startReceiver((req) => (req.path === '/deploying' ? { status: 404 } : { status: 429 }));
    const clock = new ManualClock();
    const ferry = await startFerry(
      testConfig([
        webhooksDestination('deploying', [`${receiver.url}/deploying`], { retryStatuses: [404, '5xx'] }),
        webhooksDestination('strict', [`${receiver.url}/strict`], { retryStatuses: [404, '5xx'] }),
      ]),
      { clock, deliver: false },
    );
    t.after(async () => {
      await ferry.stop();
      await receiver.close();
    });
    await ferry.send('/v1/track', { userId: 'u', event: 'E' });
    await ferry.idle();
    const rows = (await ferry.admin('GET', '/deliveries')).json.deliveries as { destinationId: string; status: string; deadReason?: string }[];
    const by = Object.fromEntries(rows.map((d) => [d.destinationId, [d.status, d.deadReason ?? null]]));
    assert.deepEqual(by, { deploying: ['pending', null], strict: ['dead', 'non_retryable_response'] });
    const shown = (await ferry.admin('GET', '/destinations/deploying')).json;
    assert.deepEqual(shown.retryStatuses, [404, '5xx']);
  });

  const invalid: [string, Record<string, unknown>, string, RegExp][] = [
    ['V01 a 2xx is a success', { retryStatuses: [404, 200] }, 'destinations[0].retryStatuses[1]', /from 300 to 599/],
    ['V02 no such class', { retryStatuses: ['6xx'] }, 'destinations[0].retryStatuses[0]', /"3xx", "4xx", "5xx"/],
    ['V03 listed twice', { retryStatuses: [404, 404] }, 'destinations[0].retryStatuses[1]', /listed twice/],
    ['V04 not a whole status', { retryStatuses: [404.5] }, 'destinations[0].retryStatuses[0]', /from 300 to 599/],
    ['V05 an unknown breaker key', { circuitBreaker: { failure: 3 } }, 'destinations[0].circuitBreaker', /failure/],
    [
      'V06 a cap below the cool-down',
      { circuitBreaker: { cooldownMs: 60_000, maxCooldownMs: 1000 } },
      'destinations[0].circuitBreaker.maxCooldownMs',
      /at least cooldownMs/,
    ],
    ['V07 a rate above 1', { circuitBreaker: { failureRate: 2 } }, 'destinations[0].circuitBreaker.failureRate', /from 0.01 to 1/],
  ];
  for (const [name, extra, path, message] of invalid)
    test(name, () => {
      const result = validateConfig({
        sources: [{ id: 'app', writeKey: 'k' }],
        destinations: [{ ...webhooksDestination('d', ['https://hooks.example.com/x']), ...extra }],
      });
      assert.equal(result.ok, false);
      const issue = !result.ok ? result.issues.find((i) => i.path.startsWith(path)) : undefined;
      assert.ok(issue, `an issue at ${path}: ${JSON.stringify(result)}`);
      assert.match(issue.message, message);
    });

  test('V08 the admin API refuses a bad list with invalid_settings and its path', async (t) => {
    const ferry = await startFerry(testConfig([]), { deliver: false });
    t.after(() => ferry.stop());
    const res = await ferry.admin('POST', '/destinations', { ...webhooksDestination('d', ['https://hooks.example.com/x']), retryStatuses: [204] });
    assert.equal(res.status, 400);
    assert.equal(res.json.errors[0].code, 'invalid_settings');
    assert.equal(res.json.errors[0].path, 'retryStatuses[0]');
  });
});
