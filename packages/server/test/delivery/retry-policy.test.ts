import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defaultRetrySettings } from '../../src/config/defaults.js';
import { baseDelayMs, decideOutcome, isRetryable, withJitter } from '../../src/delivery/retry-policy.js';
import type { SendResult } from '../../src/destinations/http/sender.js';

const at = (over: Partial<SendResult>): SendResult => ({ url: 'https://x.example.com/h', startedAtMs: 0, latencyMs: 1, ...over });
const hour = 3_600_000;
const settings = { ...defaultRetrySettings, jitter: 0 };

describe('retry policy: which results are temporary', () => {
  const cases: [string, Partial<SendResult>, boolean][] = [
    ['R01 200', { statusCode: 200 }, false],
    ['R02 204', { statusCode: 204 }, false],
    ['R03 301 (redirects are not followed)', { statusCode: 301, errorClass: 'http' }, false],
    ['R04 400', { statusCode: 400, errorClass: 'http' }, false],
    ['R05 401', { statusCode: 401, errorClass: 'http' }, false],
    ['R06 404', { statusCode: 404, errorClass: 'http' }, false],
    ['R07 408', { statusCode: 408, errorClass: 'http' }, true],
    ['R08 410', { statusCode: 410, errorClass: 'http' }, false],
    ['R09 429', { statusCode: 429, errorClass: 'http' }, true],
    ['R10 500', { statusCode: 500, errorClass: 'http' }, true],
    ['R11 501', { statusCode: 501, errorClass: 'http' }, true],
    ['R12 503', { statusCode: 503, errorClass: 'http' }, true],
    ['R13 599', { statusCode: 599, errorClass: 'http' }, true],
    ['R14 timeout', { errorClass: 'timeout' }, true],
    ['R15 connection refused', { errorClass: 'connect' }, true],
    ['R16 DNS failure', { errorClass: 'dns' }, true],
    ['R17 protocol error', { errorClass: 'protocol' }, true],
    ['R18 self-signed certificate', { errorClass: 'tls' }, false],
    ['R19 refused by the SSRF guard', { errorClass: 'ssrf' }, false],
    ['R20 unusable URL', { errorClass: 'invalid_url' }, false],
  ];
  for (const [name, result, retryable] of cases) test(name, () => assert.equal(isRetryable(at(result)), retryable));
});

describe('retry policy: the schedule', () => {
  test('S01 delays double from the initial delay up to the cap', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => baseDelayMs(settings, n)),
      [2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 300000],
    );
  });
  test('S02 jitter spreads a delay by at most ±jitter', () => {
    assert.equal(
      withJitter(10_000, 0.2, () => 0),
      8000,
    );
    assert.equal(
      withJitter(10_000, 0.2, () => 0.5),
      10_000,
    );
    assert.equal(
      withJitter(10_000, 0.2, () => 0.999999),
      12_000,
    );
  });
});

describe('retry policy: the outcome of one attempt', () => {
  const decide = (results: Partial<SendResult>[], nowMs = 0, previousAttempts = 0) =>
    decideOutcome({ results: results.map(at), previousAttempts, firstAttemptAtMs: 0, nowMs, settings, random: () => 0.5 });

  test('D01 any 2xx ends the event, whatever the other URLs did', () => {
    assert.deepEqual(decide([{ statusCode: 500, errorClass: 'http' }, { statusCode: 200 }, { errorClass: 'timeout' }]), { status: 'succeeded' });
  });
  test('D02 only permanent failures: dead letter at once', () => {
    const o = decide([
      { statusCode: 404, errorClass: 'http' },
      { errorClass: 'tls', errorMessage: 'self-signed' },
    ]);
    assert.equal(o.status, 'dead');
    assert.equal(o.status === 'dead' && o.reason, 'non_retryable_response');
  });
  test('D03 one temporary failure among permanent ones: retry', () => {
    const o = decide([
      { statusCode: 404, errorClass: 'http' },
      { statusCode: 503, errorClass: 'http' },
    ]);
    assert.deepEqual(o.status === 'pending' && o.nextAttemptAtMs, 2000);
  });
  test('D04 Retry-After stretches the delay, up to the cap, never shortens it', () => {
    const long = decide([{ statusCode: 429, errorClass: 'http', retryAfterMs: 120_000 }]);
    assert.equal(long.status === 'pending' && long.nextAttemptAtMs, 120_000);
    const short = decide([{ statusCode: 429, errorClass: 'http', retryAfterMs: 10 }]);
    assert.equal(short.status === 'pending' && short.nextAttemptAtMs, 2000);
    const huge = decide([{ statusCode: 503, errorClass: 'http', retryAfterMs: 10 * hour }]);
    assert.equal(huge.status === 'pending' && huge.nextAttemptAtMs, settings.maxRetryAfterMs);
  });
  test('D05 the last retry is at the end of the window, then dead letter with the last error', () => {
    const near = decide([{ statusCode: 500, errorClass: 'http' }], 4 * hour - 1000, 40);
    assert.equal(near.status === 'pending' && near.nextAttemptAtMs, 4 * hour);
    const over = decide([{ statusCode: 500, errorClass: 'http' }], 4 * hour, 41);
    assert.equal(over.status, 'dead');
    assert.equal(over.status === 'dead' && over.reason, 'retry_window_exhausted');
    assert.match(over.status === 'dead' ? over.lastError : '', /HTTP 500/);
  });
});
