import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sourceHeaderValue, webhookHeaders } from '../../src/destinations/webhooks/request.js';
import type { ClaimedDelivery } from '../../src/store/store.js';
import { userAgent } from '../../src/util/version.js';

describe('X-Ferry-Source of a delivery', () => {
  // [case, job, header value]
  const cases: [string, Pick<ClaimedDelivery, 'sourceId' | 'kind'>, string][] = [
    ['H01 an event: the source that sent it', { kind: 'event', sourceId: 'backend' }, 'backend'],
    ['H02 a deletion notice: the affected source', { kind: 'delete', sourceId: 'web' }, 'web'],
    ['H03 an audience identify belongs to no source', { kind: 'audience', sourceId: null }, 'ferry:audience'],
  ];
  for (const [name, job, expected] of cases) test(name, () => assert.equal(sourceHeaderValue(job), expected));
});

describe('webhookHeaders', () => {
  test("H04 static headers as configured, then Ferry's own as the spec spells them", () => {
    const headers = webhookHeaders(
      { url: 'https://hooks.example.com/', headers: { 'x-team': 'growth', Authorization: 'Bearer t' } },
      { xSignature: 'abc' },
      'backend',
    );
    assert.deepEqual(Object.entries(headers), [
      ['x-team', 'growth'],
      ['Authorization', 'Bearer t'],
      ['Content-Type', 'application/json'],
      ['User-Agent', userAgent],
      ['X-Signature', 'abc'],
      ['X-Ferry-Source', 'backend'],
    ]);
  });
});
