import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dedupKey } from '../src/index.js';

describe('dedupKey', () => {
  const track = { version: 1, type: 'track', userId: 'u1', messageId: 'm-1', timestamp: '2026-01-02T03:04:05.678Z', context: {} };

  // [case, headers, body, key]
  const cases: [string, Parameters<typeof dedupKey>[0], unknown, string | undefined][] = [
    ['K01 source and messageId, Node header names', { 'x-ferry-source': 'backend' }, track, 'backend/m-1'],
    ['K02 a header spelled as Ferry sends it', { 'X-Ferry-Source': 'backend' }, track, 'backend/m-1'],
    ['K03 a Fetch Headers object', new Headers({ 'X-Ferry-Source': 'web' }), track, 'web/m-1'],
    ['K04 the same messageId from another source is another key', { 'x-ferry-source': 'partner' }, track, 'partner/m-1'],
    ['K05 a repeated header counts by its first value', { 'x-ferry-source': ['backend', 'other'] }, track, 'backend/m-1'],
    [
      'K06 a delete notice: userId and timestamp stand in for the messageId',
      { 'x-ferry-source': 'backend' },
      { type: 'delete', userId: 'u1', timestamp: '2026-01-02T03:04:05.678Z' },
      'backend/delete:u1:2026-01-02T03:04:05.678Z',
    ],
    ['K07 an audience identify', { 'x-ferry-source': 'ferry:audience' }, { ...track, messageId: 'aud_1' }, 'ferry:audience/aud_1'],
    ['K08 no source header', {}, track, undefined],
    ['K09 an empty source header', { 'x-ferry-source': '' }, track, undefined],
    ['K10 no messageId on a body that is not a delete', { 'x-ferry-source': 'backend' }, { type: 'track' }, undefined],
    ['K11 a body that is not an object', { 'x-ferry-source': 'backend' }, 'm-1', undefined],
  ];
  for (const [name, headers, body, expected] of cases) {
    it(name, () => assert.equal(dedupKey(headers, body), expected));
  }
});
