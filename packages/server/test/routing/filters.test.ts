/**
 * Destination filters as a table of (filter, call, verdict): every operator and every way of
 * combining them, each filter first checked as the configuration checks it, then compiled as
 * the catalogue compiles it. Then the filters that are refused, each with the path of its bad
 * clause, in a whole configuration file as `ferry serve` reads it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkFilter, filterLimits } from '../../src/config/filter-schema.js';
import { validateConfig, validateDestination } from '../../src/config/schema.js';
import { FerryError } from '../../src/errors/error-codes.js';
import type { NormalizedMessage } from '../../src/model/message.js';
import { compileFilter } from '../../src/routing/filter.js';

/** A stored call of a type, with the fields given. */
function call(type: NormalizedMessage['type'], fields: Partial<NormalizedMessage> = {}): NormalizedMessage {
  return {
    type,
    messageId: 'm-1',
    userId: 'u-1',
    context: {},
    integrations: {},
    timestamp: '2024-01-02T03:04:05.678Z',
    receivedAt: '2024-01-02T03:04:05.678Z',
    ...(type === 'track' && fields.event === undefined ? { event: 'Signed Up' } : {}),
    ...fields,
  };
}

const order = call('track', {
  event: 'Order Completed',
  properties: { plan: 'pro', total: 120, currency: 'EUR', coupon: null, test: false, tags: ['a'], nested: { level: 2 } },
  context: { app: { version: '2.3.1', build: 42 }, locale: 'de-DE' },
});
const signup = call('track', { event: 'Signed Up', properties: { plan: 'free', total: 0 } });
const identify = call('identify', { traits: { email: 'a@example.com', age: 31, vip: true } });
const page = call('page', { name: 'Pricing', properties: { path: '/pricing' } });
const screen = call('screen', { name: 'Home' });
const group = call('group', { groupId: 'g-1', traits: { employees: 50 } });
const alias = call('alias', { previousId: 'anon-1' });
const anonymous = call('track', { userId: undefined, anonymousId: 'anon-2', event: 'Order Refunded', properties: { total: '99' } });
const calls = { order, signup, identify, page, screen, group, alias, anonymous };
type CallName = keyof typeof calls;

/** [case, filter, call, delivered?] */
const table: [string, unknown, CallName, boolean][] = [
  // type
  ['T01 type: one type matches', { allow: { type: 'track' } }, 'order', true],
  ['T02 type: another type does not', { allow: { type: 'track' } }, 'identify', false],
  ['T03 type: one of a list', { allow: { type: ['identify', 'group'] } }, 'group', true],
  ['T04 type: not in the list', { allow: { type: ['identify', 'group'] } }, 'page', false],
  ['T05 type: dropped by type', { drop: { type: ['page', 'screen'] } }, 'screen', false],
  ['T06 type: others kept by a drop', { drop: { type: ['page', 'screen'] } }, 'alias', true],
  // event
  ['E01 event: exact name', { allow: { event: 'Order Completed' } }, 'order', true],
  ['E02 event: another name', { allow: { event: 'Order Completed' } }, 'signup', false],
  ['E03 event: exact is case-sensitive', { allow: { event: 'order completed' } }, 'order', false],
  ['E04 event: one of a list', { allow: { event: ['Signed Up', 'Logged In'] } }, 'signup', true],
  ['E05 event: not in the list', { allow: { event: ['Signed Up', 'Logged In'] } }, 'order', false],
  ['E06 event: prefix', { allow: { event: { prefix: 'Order ' } } }, 'order', true],
  ['E07 event: prefix of another call', { allow: { event: { prefix: 'Order ' } } }, 'anonymous', true],
  ['E08 event: prefix not matching', { allow: { event: { prefix: 'Order ' } } }, 'signup', false],
  ['E09 event: one of several prefixes', { allow: { event: { prefix: ['Sign', 'Log'] } } }, 'signup', true],
  ['E10 event: a non-track call has no event', { allow: { event: 'Pricing' } }, 'page', false],
  ['E11 event: dropped by name, others kept', { drop: { event: { prefix: 'Order ' } } }, 'identify', true],
  // equals
  ['F01 equals: a string', { allow: { field: 'properties.plan', equals: 'pro' } }, 'order', true],
  ['F02 equals: another string', { allow: { field: 'properties.plan', equals: 'pro' } }, 'signup', false],
  ['F03 equals: a number', { allow: { field: 'properties.total', equals: 120 } }, 'order', true],
  ['F04 equals: a number is not its string', { allow: { field: 'properties.total', equals: 99 } }, 'anonymous', false],
  ['F05 equals: false', { allow: { field: 'properties.test', equals: false } }, 'order', true],
  ['F06 equals: true', { allow: { field: 'traits.vip', equals: true } }, 'identify', true],
  ['F07 equals: null matches null', { allow: { field: 'properties.coupon', equals: null } }, 'order', true],
  ['F08 equals: null does not match a missing field', { allow: { field: 'properties.coupon', equals: null } }, 'signup', false],
  ['F09 equals: a nested context path', { allow: { field: 'context.app.version', equals: '2.3.1' } }, 'order', true],
  ['F10 equals: a missing nested path', { allow: { field: 'context.app.version', equals: '2.3.1' } }, 'signup', false],
  ['F11 equals: a path through a scalar', { allow: { field: 'properties.plan.name', equals: 'pro' } }, 'order', false],
  ['F12 equals: a path into a list finds nothing', { allow: { field: 'properties.tags.0', equals: 'a' } }, 'order', false],
  ['F13 equals: a top-level field', { allow: { field: 'userId', equals: 'u-1' } }, 'identify', true],
  ['F14 equals: an inherited key is not a field', { allow: { field: 'properties.toString', exists: true } }, 'order', false],
  // in
  ['F15 in: one of strings', { allow: { field: 'properties.plan', in: ['pro', 'enterprise'] } }, 'order', true],
  ['F16 in: none of them', { allow: { field: 'properties.plan', in: ['pro', 'enterprise'] } }, 'signup', false],
  ['F17 in: numbers', { allow: { field: 'traits.employees', in: [10, 50, 100] } }, 'group', true],
  ['F18 in: a missing field', { allow: { field: 'traits.plan', in: ['pro'] } }, 'identify', false],
  ['F19 in: mixed scalars with null', { allow: { field: 'properties.coupon', in: ['X', null] } }, 'order', true],
  // exists
  ['F20 exists: true, present', { allow: { field: 'traits.email', exists: true } }, 'identify', true],
  ['F21 exists: true, missing', { allow: { field: 'traits.email', exists: true } }, 'group', false],
  ['F22 exists: true, null counts as missing', { allow: { field: 'properties.coupon', exists: true } }, 'order', false],
  ['F23 exists: false, missing', { allow: { field: 'properties.coupon', exists: false } }, 'signup', true],
  ['F24 exists: false, present', { allow: { field: 'properties.plan', exists: false } }, 'order', false],
  ['F25 exists: an object counts', { allow: { field: 'properties.nested', exists: true } }, 'order', true],
  ['F26 exists: a root alone', { allow: { field: 'traits', exists: true } }, 'order', false],
  // numeric comparisons
  ['N01 gt: above', { allow: { field: 'properties.total', gt: 100 } }, 'order', true],
  ['N02 gt: equal is not above', { allow: { field: 'properties.total', gt: 120 } }, 'order', false],
  ['N03 gte: equal', { allow: { field: 'properties.total', gte: 120 } }, 'order', true],
  ['N04 gte: below', { allow: { field: 'properties.total', gte: 121 } }, 'order', false],
  ['N05 lt: below', { allow: { field: 'properties.total', lt: 1 } }, 'signup', true],
  ['N06 lt: equal is not below', { allow: { field: 'properties.total', lt: 0 } }, 'signup', false],
  ['N07 lte: equal', { allow: { field: 'properties.total', lte: 0 } }, 'signup', true],
  ['N08 lte: above', { allow: { field: 'properties.total', lte: 119.5 } }, 'order', false],
  ['N09 a range: inside', { allow: { field: 'traits.age', gte: 18, lt: 65 } }, 'identify', true],
  ['N10 a range: outside', { allow: { field: 'traits.age', gte: 40, lt: 65 } }, 'identify', false],
  ['N11 a numeric string is not a number', { allow: { field: 'properties.total', gt: 1 } }, 'anonymous', false],
  ['N12 a missing field is not a number', { allow: { field: 'properties.total', lte: 1000 } }, 'identify', false],
  ['N13 a negative bound and a decimal', { allow: { field: 'context.app.build', gt: -1.5 } }, 'order', true],
  ['N14 equals and a comparison together', { allow: { field: 'properties.total', equals: 120, lt: 100 } }, 'order', false],
  // all, any, not
  ['C01 all: every one holds', { allow: { all: [{ type: 'track' }, { field: 'properties.plan', equals: 'pro' }] } }, 'order', true],
  ['C02 all: one fails', { allow: { all: [{ type: 'track' }, { field: 'properties.plan', equals: 'pro' }] } }, 'signup', false],
  ['C03 all: of one', { allow: { all: [{ type: 'identify' }] } }, 'identify', true],
  ['C04 any: one holds', { allow: { any: [{ type: 'identify' }, { event: 'Signed Up' }] } }, 'signup', true],
  ['C05 any: none holds', { allow: { any: [{ type: 'identify' }, { event: 'Signed Up' }] } }, 'order', false],
  ['C06 any: of one', { allow: { any: [{ type: 'page' }] } }, 'page', true],
  ['C07 not: inverts a match', { allow: { not: { type: 'track' } } }, 'order', false],
  ['C08 not: inverts a miss', { allow: { not: { type: 'track' } } }, 'page', true],
  ['C09 not: a missing field', { allow: { not: { field: 'properties.test', equals: true } } }, 'signup', true],
  ['C10 nested: any of all', { allow: { any: [{ all: [{ type: 'track' }, { field: 'properties.total', gte: 100 }] }, { type: 'identify' }] } }, 'order', true],
  [
    'C11 nested: any of all, none',
    { allow: { any: [{ all: [{ type: 'track' }, { field: 'properties.total', gte: 100 }] }, { type: 'identify' }] } },
    'signup',
    false,
  ],
  ['C12 nested: not of any', { allow: { not: { any: [{ type: 'alias' }, { type: 'group' }] } } }, 'group', false],
  // allow and drop together
  ['D01 allow and drop: allowed, not dropped', { allow: { type: 'track' }, drop: { field: 'properties.test', equals: true } }, 'order', true],
  ['D02 allow and drop: allowed, then dropped', { allow: { type: 'track' }, drop: { field: 'properties.currency', equals: 'EUR' } }, 'order', false],
  ['D03 allow and drop: not allowed', { allow: { type: 'identify' }, drop: { field: 'traits.vip', equals: false } }, 'page', false],
  ['D04 drop only: dropped', { drop: { field: 'context.locale', in: ['de-DE', 'fr-FR'] } }, 'order', false],
  ['D05 drop only: kept', { drop: { field: 'context.locale', in: ['de-DE', 'fr-FR'] } }, 'signup', true],
  ['D06 drop only: an anonymous call', { drop: { field: 'userId', exists: false } }, 'anonymous', false],
  ['D07 drop only: an alias kept', { drop: { field: 'userId', exists: false } }, 'alias', true],
];

describe('a filter decides, as a table of cases', () => {
  for (const [name, filter, callName, delivered] of table) {
    test(name, () => {
      const checked = checkFilter(filter);
      assert.deepEqual(checked.issues, [], 'the filter is valid');
      assert.deepEqual(checked.value, filter, 'validation keeps the filter as it was written');
      assert.equal(compileFilter(checked.value!)(calls[callName]), delivered);
    });
  }

  test('the table names every operator and every combination', () => {
    const text = JSON.stringify(table.map(([, filter]) => filter));
    for (const key of ['allow', 'drop', 'all', 'any', 'not', 'type', 'event', 'prefix', 'field', 'equals', 'in', 'exists', 'gt', 'gte', 'lt', 'lte']) {
      assert.ok(text.includes(`"${key}":`), `no case uses ${key}`);
    }
  });
});

/** A configuration file with one destination whose filter (and removals) are given. */
function file(destination: Record<string, unknown>) {
  return {
    sources: [{ id: 'backend', writeKey: 'wk-backend-0123456789' }],
    destinations: [
      { id: 'ok', type: 'Webhooks', sources: ['backend'], settings: { webhookUrl: 'https://hooks.example.com/a' } },
      { id: 'crm', type: 'Webhooks', sources: ['backend'], settings: { webhookUrl: 'https://hooks.example.com/b' }, ...destination },
    ],
  };
}

/** [filter or removals, path of the issue, rule] */
const refused: [string, Record<string, unknown>, string, RegExp][] = [
  ['not a mapping', { filter: ['track'] }, 'destinations[1].filter', /mapping with allow, drop or both/],
  ['neither allow nor drop', { filter: {} }, 'destinations[1].filter', /give allow .* or both/],
  ['an unknown key beside allow', { filter: { allow: { type: 'track' }, deny: { type: 'page' } } }, 'destinations[1].filter.deny', /allow, drop/],
  ['a condition that is a string', { filter: { allow: 'track' } }, 'destinations[1].filter.allow', /must be a condition.*got a string/],
  ['an empty condition', { filter: { allow: {} } }, 'destinations[1].filter.allow', /got an empty mapping/],
  ['an unknown kind', { filter: { allow: { evnt: 'A' } } }, 'destinations[1].filter.allow.evnt', /one of all, any, not, type, event, field/],
  ['two kinds in one mapping', { filter: { allow: { type: 'track', event: 'A' } } }, 'destinations[1].filter.allow', /type and event: list them under all/],
  ['all not a list', { filter: { allow: { all: { type: 'track' } } } }, 'destinations[1].filter.allow.all', /list of conditions.*got a mapping/],
  ['all empty', { filter: { allow: { all: [] } } }, 'destinations[1].filter.allow.all', /at least one condition/],
  [
    'a bad clause deep in all',
    { filter: { allow: { all: [{ type: 'track' }, { event: 'A' }, { field: 'properties.total', gt: 'ten' }] } } },
    'destinations[1].filter.allow.all[2].gt',
    /must be a number/,
  ],
  [
    'a bad clause in any in not',
    { filter: { drop: { not: { any: [{ type: 'trak' }] } } } },
    'destinations[1].filter.drop.not.any[0].type',
    /unknown call type "trak"; the types are identify, track/,
  ],
  ['a type list item', { filter: { allow: { type: ['track', 5] } } }, 'destinations[1].filter.allow.type[1]', /must be a call type \(got a number\)/],
  ['an empty type list', { filter: { allow: { type: [] } } }, 'destinations[1].filter.allow.type', /at least one/],
  ['an empty event name', { filter: { allow: { event: '' } } }, 'destinations[1].filter.allow.event', /must not be empty/],
  ['an event list item', { filter: { allow: { event: ['A', null] } } }, 'destinations[1].filter.allow.event[1]', /must be a string \(got null\)/],
  [
    'an event mapping without prefix',
    { filter: { allow: { event: { startsWith: 'A' } } } },
    'destinations[1].filter.allow.event.startsWith',
    /allowed keys here: prefix/,
  ],
  ['an empty prefix', { filter: { allow: { event: { prefix: '' } } } }, 'destinations[1].filter.allow.event.prefix', /must not be empty/],
  ['an event that is a number', { filter: { allow: { event: 7 } } }, 'destinations[1].filter.allow.event', /event name, a list of them, or \{ prefix \}/],
  ['a field without a path', { filter: { allow: { field: 3, equals: 1 } } }, 'destinations[1].filter.allow.field', /must be a path/],
  [
    'a field of an unknown root',
    { filter: { allow: { field: 'props.plan', equals: 'pro' } } },
    'destinations[1].filter.allow.field',
    /must start with properties, traits, context/,
  ],
  ['a field with an empty key', { filter: { allow: { field: 'properties..plan', exists: true } } }, 'destinations[1].filter.allow.field', /none empty/],
  ['a field inside a scalar field', { filter: { allow: { field: 'userId.x', exists: true } } }, 'destinations[1].filter.allow.field', /userId has no keys/],
  ['a field naming __proto__', { filter: { allow: { field: 'properties.__proto__', exists: true } } }, 'destinations[1].filter.allow.field', /__proto__/],
  ['a field naming constructor', { filter: { allow: { field: 'properties.constructor', exists: true } } }, 'destinations[1].filter.allow.field', /constructor/],
  ['a removal reaching a prototype', { removeFields: ['properties.constructor.prototype.polluted'] }, 'destinations[1].removeFields[0]', /constructor/],
  [
    'a field without an operator',
    { filter: { allow: { field: 'properties.plan' } } },
    'destinations[1].filter.allow',
    /at least one of equals, in, exists, gt, gte, lt, lte/,
  ],
  [
    'an unknown operator',
    { filter: { allow: { field: 'properties.plan', eq: 'pro' } } },
    'destinations[1].filter.allow.eq',
    /equals, in, exists, gt, gte, lt, lte/,
  ],
  ['equals a mapping', { filter: { allow: { field: 'properties.plan', equals: { a: 1 } } } }, 'destinations[1].filter.allow.equals', /compared with one value/],
  ['in not a list', { filter: { allow: { field: 'properties.plan', in: 'pro' } } }, 'destinations[1].filter.allow.in', /list of values/],
  ['in with a list item', { filter: { allow: { field: 'properties.plan', in: ['pro', ['x']] } } }, 'destinations[1].filter.allow.in[1]', /got a list/],
  ['exists not a boolean', { filter: { allow: { field: 'properties.plan', exists: 'yes' } } }, 'destinations[1].filter.allow.exists', /true or false/],
  ['lte not a number', { filter: { allow: { field: 'properties.total', lte: null } } }, 'destinations[1].filter.allow.lte', /must be a number \(got null\)/],
  ['removeFields not a list', { removeFields: 'properties.email' }, 'destinations[1].removeFields', /must be a list of paths/],
  ['removeFields of a top-level field', { removeFields: ['userId'] }, 'destinations[1].removeFields[0]', /inside properties, traits, context/],
  ['removeFields of a root', { removeFields: ['properties.email', 'traits'] }, 'destinations[1].removeFields[1]', /inside properties, traits, context/],
  ['removeFields twice', { removeFields: ['traits.phone', 'traits.phone'] }, 'destinations[1].removeFields[1]', /listed twice/],
  [
    'a misspelt key beside filter',
    { filters: { allow: { type: 'track' } } },
    'destinations[1].filters',
    /unknown key; allowed keys here: .*filter, removeFields/,
  ],
];

describe('a filter that breaks a rule is refused with the path of its clause', () => {
  for (const [name, destination, path, rule] of refused) {
    test(name, () => {
      const result = validateConfig(file(destination));
      assert.equal(result.ok, false);
      const issues = result.ok ? [] : result.issues;
      assert.ok(
        issues.some((i) => i.path === path && rule.test(i.message)),
        `expected an issue at ${path} matching ${rule}, got ${JSON.stringify(issues, null, 2)}`,
      );
      assert.ok(
        issues.every((i) => i.path.startsWith('destinations[1]')),
        `only the broken destination is reported: ${JSON.stringify(issues)}`,
      );
    });
  }

  test('every broken clause of one filter is reported, not only the first', () => {
    const result = validateConfig(file({ filter: { allow: { any: [{ type: 'nope' }, { field: 'properties.x', gt: 'a' }] }, drop: 'x' } }));
    assert.equal(result.ok, false);
    assert.deepEqual(
      (result.ok ? [] : result.issues).map((i) => i.path),
      ['destinations[1].filter.allow.any[0].type', 'destinations[1].filter.allow.any[1].gt', 'destinations[1].filter.drop'],
    );
  });

  test('nesting deeper than the limit is refused where it goes too deep', () => {
    let condition: unknown = { type: 'track' };
    for (let i = 0; i < filterLimits.maxDepth + 1; i++) condition = { not: condition };
    const issues = checkFilter({ allow: condition }).issues;
    assert.equal(issues.length, 1);
    assert.match(issues[0]!.message, new RegExp(`nest at most ${filterLimits.maxDepth} deep`));
    assert.equal(issues[0]!.path.length, 1 + filterLimits.maxDepth * 1);
  });

  test('more conditions than the limit are refused', () => {
    const many = Array.from({ length: filterLimits.maxConditions }, () => ({ type: 'track' }));
    const issues = checkFilter({ allow: { any: many } }).issues;
    assert.deepEqual(
      issues.map((i) => i.path),
      [[]],
    );
    assert.match(issues[0]!.message, /at most 200 conditions \(got 201\)/);
  });

  test('a ${VAR} reference yields a string: a numeric bound says so', () => {
    const issues = checkFilter({ allow: { field: 'properties.total', gte: '100' } }).issues;
    assert.match(issues[0]!.message, /a \$\{VAR\} reference always yields a string/);
  });

  test('the admin API refuses the same filter with the path inside the destination', () => {
    const body = file({ filter: { allow: { all: [{ type: 'track' }, { event: 'A' }, { field: 'properties.total', gt: 'ten' }] } } }).destinations[1];
    assert.throws(
      () => validateDestination(body, ['backend']),
      (error: unknown) => error instanceof FerryError && error.code === 'invalid_settings' && error.path === 'filter.allow.all[2].gt',
    );
  });
});

describe('a valid filter and removals are kept as given', () => {
  test('a destination keeps its filter and removals; one without them has neither key', () => {
    const result = validateConfig(
      file({ filter: { allow: { type: ['track', 'identify'] }, drop: { event: { prefix: 'Test ' } } }, removeFields: ['properties.email', 'context.ip'] }),
    );
    assert.ok(result.ok, JSON.stringify(result));
    const [plain, crm] = result.value.destinations;
    assert.deepEqual(crm!.filter, { allow: { type: ['track', 'identify'] }, drop: { event: { prefix: 'Test ' } } });
    assert.deepEqual(crm!.removeFields, ['properties.email', 'context.ip']);
    assert.equal(Object.hasOwn(plain!, 'filter'), false);
    assert.equal(Object.hasOwn(plain!, 'removeFields'), false);
  });

  test('an empty removeFields is the same as none', () => {
    const result = validateConfig(file({ removeFields: [] }));
    assert.ok(result.ok);
    assert.equal(Object.hasOwn(result.value.destinations[1]!, 'removeFields'), false);
  });
});
