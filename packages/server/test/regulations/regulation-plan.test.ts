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
    const asked = explore(links, aliasLookup([['a', 'u'], ['u', 'b'], ['b', 'c'], ['x', 'y']]));
    assert.deepEqual(asked, [['u'], ['a', 'b'], ['c']]);
    assert.deepEqual(links.userIds().sort(), ['a', 'b', 'c', 'u']);
  });

  test('P02 each user named gets only the sources of its own identities', () => {
    const links = new LinkedIdentities(['u', 'v', 'w']);
    explore(links, aliasLookup([['old-u', 'u']]));
    links.addAnonymous([['u', 'anon-u'], ['v', 'anon-v']]);
    assert.deepEqual(links.anonymousIds().sort(), ['anon-u', 'anon-v', 'old-u', 'u', 'v', 'w']);
    const plan = links.plan(
      41,
      [['app', 'u'], ['legacy', 'old-u'], ['app', 'v']],
      [['web', 'anon-u'], ['web', 'anon-v'], ['crm', 'old-u']],
    );
    assert.deepEqual(plan.affected, { u: ['app', 'crm', 'legacy', 'web'], v: ['app', 'web'], w: [] });
    assert.equal(plan.maxEventId, 41);
  });

  test('P03 two users named who are linked share their identities', () => {
    const links = new LinkedIdentities(['u', 'v']);
    explore(links, aliasLookup([['u', 'v']]));
    const plan = links.plan(1, [['app', 'u'], ['other', 'v']], []);
    assert.deepEqual(plan.affected, { u: ['app', 'other'], v: ['app', 'other'] });
  });
});
