/** Which events an archive replay leaves out because a pending deletion request names their user (store/deletion-screen.ts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deletionScreen, screenedIdentities, unplannedInScope } from '../../src/store/deletion-screen.js';

const plan = (userIds: string[], anonymousIds: string[]) =>
  JSON.stringify({ maxEventId: 10, userIds, anonymousIds, affected: {}, linkedIdentities: { followed: 0, skipped: 0, reason: null } });

test('no pending request screens nothing', () => {
  assert.equal(deletionScreen([])({ sourceId: 'app', userId: 'u1', anonymousId: null }), false);
});

test('a request without a plan screens the users named, as user ids and as anonymous ids, in its scope only', () => {
  const screened = deletionScreen([{ user_ids: '["u1"]', source_ids: '["app"]', plan: null }]);
  assert.equal(screened({ sourceId: 'app', userId: 'u1', anonymousId: 'a9' }), true);
  assert.equal(screened({ sourceId: 'app', userId: null, anonymousId: 'u1' }), true);
  assert.equal(screened({ sourceId: 'other', userId: 'u1', anonymousId: null }), false, 'out of its scope');
  assert.equal(screened({ sourceId: 'app', userId: 'u2', anonymousId: null }), false);
});

test('a planned request screens the linked user ids, and its anonymous ids only on events without a user id, as its purge deletes them', () => {
  const screened = deletionScreen([{ user_ids: '["u1"]', source_ids: null, plan: plan(['u1', 'alias-of-u1'], ['anon-1']) }]);
  assert.equal(screened({ sourceId: 'any', userId: 'alias-of-u1', anonymousId: null }), true);
  assert.equal(screened({ sourceId: 'any', userId: null, anonymousId: 'anon-1' }), true);
  assert.equal(screened({ sourceId: 'any', userId: 'someone-else', anonymousId: 'anon-1' }), false, "another user's event stays");
  assert.deepEqual(screenedIdentities([{ user_ids: '["u1"]', source_ids: null, plan: plan(['u1', 'alias-of-u1'], ['anon-1']) }]), {
    userIds: ['u1', 'alias-of-u1'],
    anonymousIds: ['u1', 'anon-1'],
  });
});

test('a request without a plan whose scope covers a source of the job makes the job wait; a planned one or one of other sources does not', () => {
  assert.equal(unplannedInScope([{ user_ids: '["u1"]', source_ids: null, plan: null }], ['app']), true);
  assert.equal(unplannedInScope([{ user_ids: '["u1"]', source_ids: '["app","web"]', plan: null }], ['web']), true);
  assert.equal(unplannedInScope([{ user_ids: '["u1"]', source_ids: '["other"]', plan: null }], ['app']), false);
  assert.equal(unplannedInScope([{ user_ids: '["u1"]', source_ids: null, plan: plan(['u1'], []) }], ['app']), false);
});
