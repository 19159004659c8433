import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LinkedIdentities, type AliasLink } from '../../src/model/regulation-plan.js';

/** Alias calls as a store holds them, answered the way a store answers a lookup of some ids. */
function aliasLookup(all: AliasLink[]): (ids: string[]) => AliasLink[] {
  return (ids) => all.filter(([previousId, userId]) => ids.includes(previousId) || ids.includes(userId));
}

/** Reads alias links as a store does: until every id found has been looked up; returns the lookups made. */
function explore(links: LinkedIdentities, lookup: (ids: string[]) => AliasLink[]): string[][] {
  const asked: string[][] = [];
  for (let ids = links.unexplored(); ids.length > 0; ids = links.unexplored()) {
    asked.push(ids);
    links.addAliases(lookup(ids));
  }
  return asked;
}

describe('LinkedIdentities: what a deletion request deletes', () => {
  test('P01 alias links are followed from link to link, either way, each id looked up once', () => {
    const links = new LinkedIdentities(['u']);
    const asked = explore(
      links,
      aliasLookup([
        ['a', 'u'],
        ['u', 'b'],
        ['b', 'c'],
        ['x', 'y'],
      ]),
    );
    assert.deepEqual(asked, [['u'], ['a', 'b'], ['c']]);
    assert.deepEqual(links.userIds().sort(), ['a', 'b', 'c', 'u']);
  });

  test('P02 each user named gets only the sources of its own identities', () => {
    const links = new LinkedIdentities(['u', 'v', 'w']);
    explore(links, aliasLookup([['old-u', 'u']]));
    links.addAnonymous([
      ['u', 'anon-u'],
      ['v', 'anon-v'],
    ]);
    assert.deepEqual(links.anonymousIds().sort(), ['anon-u', 'anon-v', 'old-u', 'u', 'v', 'w']);
    const plan = links.plan(
      41,
      [
        ['app', 'u'],
        ['legacy', 'old-u'],
        ['app', 'v'],
      ],
      [
        ['web', 'anon-u'],
        ['web', 'anon-v'],
        ['crm', 'old-u'],
      ],
    );
    assert.deepEqual(plan.affected, { u: ['app', 'crm', 'legacy', 'web'], v: ['app', 'web'], w: [] });
    assert.equal(plan.maxEventId, 41);
  });

  test('P03 two users named who are linked share their identities', () => {
    const links = new LinkedIdentities(['u', 'v']);
    explore(links, aliasLookup([['u', 'v']]));
    const plan = links.plan(
      1,
      [
        ['app', 'u'],
        ['other', 'v'],
      ],
      [],
    );
    assert.deepEqual(plan.affected, { u: ['app', 'other'], v: ['app', 'other'] });
  });

  test('P04 a previousId aliased to two users links neither to the other; the report counts it and the user beyond it as skipped', () => {
    const links = new LinkedIdentities(['alice']);
    explore(
      links,
      aliasLookup([
        ['device-1', 'alice'],
        ['device-1', 'bob'],
        ['old-alice', 'alice'],
        ['old-bob', 'bob'],
      ]),
    );
    assert.deepEqual(links.userIds().sort(), ['alice', 'old-alice']);
    links.addAnonymous([
      ['alice', 'device-1'],
      ['alice', 'anon-a'],
    ]);
    assert.deepEqual(links.anonymousIds().sort(), ['alice', 'anon-a', 'old-alice'], 'the shared id is not deleted as an anonymous id either');
    const plan = links.plan(
      1,
      [
        ['app', 'alice'],
        ['app', 'bob'],
      ],
      [],
    );
    assert.deepEqual(plan.linkedIdentities, { followed: 1, skipped: 2, reason: 'placeholder_or_shared_id' });
  });

  test('P05 no link goes through a placeholder id, as a previousId or as an anonymous id', () => {
    const links = new LinkedIdentities(['alice']);
    const asked = explore(
      links,
      aliasLookup([
        ['undefined', 'alice'],
        ['undefined', 'bob'],
        ['0', 'alice'],
        [' NULL ', 'alice'],
      ]),
    );
    assert.deepEqual(asked, [['alice']], 'a placeholder is never looked up');
    links.addAnonymous([
      ['alice', ''],
      ['alice', 'anonymous'],
      ['alice', 'anon-a'],
    ]);
    assert.deepEqual(links.userIds(), ['alice']);
    assert.deepEqual(links.anonymousIds().sort(), ['alice', 'anon-a']);
    assert.deepEqual(links.plan(1, [], []).linkedIdentities, { followed: 0, skipped: 3, reason: 'placeholder_or_shared_id' });
  });

  test('P06 past the limit no link is followed: only the named users and their own anonymous ids', () => {
    const links = new LinkedIdentities(['u'], 2);
    const asked = explore(
      links,
      aliasLookup([
        ['a', 'u'],
        ['b', 'u'],
        ['c', 'u'],
        ['d', 'a'],
      ]),
    );
    assert.deepEqual(asked, [['u']], 'nothing is looked up once over the limit');
    links.addAnonymous([['u', 'anon-u']]);
    assert.deepEqual(links.userIds(), ['u']);
    assert.deepEqual(links.anonymousIds().sort(), ['anon-u', 'u']);
    const plan = links.plan(
      1,
      [
        ['app', 'u'],
        ['legacy', 'a'],
      ],
      [],
    );
    assert.deepEqual(plan.affected, { u: ['app'] });
    assert.deepEqual(plan.linkedIdentities, { followed: 0, skipped: 3, reason: 'limit_exceeded' });
  });

  test('P07 within the limit every link is followed and the report counts them', () => {
    const links = new LinkedIdentities(['u'], 2);
    explore(
      links,
      aliasLookup([
        ['a', 'u'],
        ['u', 'b'],
      ]),
    );
    assert.deepEqual(links.plan(1, [], []).linkedIdentities, { followed: 2, skipped: 0, reason: null });
  });
});
