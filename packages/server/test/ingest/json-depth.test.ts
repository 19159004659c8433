import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isWithinJsonDepth, maxMessageDepth } from '../../src/ingest/json-depth.js';

/** An object nested `levels` deep: nest(1) is `{}`, nest(2) is `{"a":{}}`. */
function nest(levels: number, inner: 'object' | 'array' = 'object'): unknown {
  let value: unknown = inner === 'object' ? {} : [];
  for (let i = 1; i < levels; i++) value = inner === 'object' ? { a: value } : [value];
  return value;
}

describe('isWithinJsonDepth', () => {
  // [case, value, limit, expected]
  const cases: [string, unknown, number, boolean][] = [
    ['D01 a string has depth 0', 'x', 0, true],
    ['D02 null has depth 0', null, 0, true],
    ['D03 {} has depth 1: over a limit of 0', {}, 0, false],
    ['D04 {} within 1', {}, 1, true],
    ['D05 [] has depth 1 too', [], 0, false],
    ['D06 primitives inside add no level', { a: 1, b: 'x', c: null, d: true }, 1, true],
    ['D07 {"a":{}} is depth 2: over 1', { a: {} }, 1, false],
    ['D08 {"a":[1]} is depth 2', { a: [1] }, 2, true],
    ['D09 the deepest branch counts, not the first', { a: 1, b: { c: 2 }, z: { y: { x: {} } } }, 3, false],
    ['D10 the deepest branch counts, within', { a: 1, b: { c: 2 }, z: { y: { x: {} } } }, 4, true],
    ['D11 arrays and objects alternate: depth 5', { a: [{ b: [{}] }] }, 5, true],
    ['D12 arrays and objects alternate: over 4', { a: [{ b: [{}] }] }, 4, false],
    ['D13 exactly the message limit', nest(maxMessageDepth), maxMessageDepth, true],
    ['D14 one past the message limit', nest(maxMessageDepth + 1), maxMessageDepth, false],
    ['D15 arrays: exactly the limit', nest(maxMessageDepth, 'array'), maxMessageDepth, true],
    ['D16 arrays: one past the limit', nest(maxMessageDepth + 1, 'array'), maxMessageDepth, false],
    ['D17 a wide flat object', Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, { v: i }])), 2, true],
  ];
  for (const [name, value, limit, expected] of cases) {
    test(name, () => assert.equal(isWithinJsonDepth(value, limit), expected));
  }

  test('D18 the default limit is 32 levels', () => {
    assert.equal(maxMessageDepth, 32);
    assert.equal(isWithinJsonDepth(nest(32)), true);
    assert.equal(isWithinJsonDepth(nest(33)), false);
  });

  test('D19 does not recurse: 1,000,000 levels parsed from JSON are refused without a stack overflow', () => {
    const levels = 1_000_000;
    const deep: unknown = JSON.parse('['.repeat(levels) + ']'.repeat(levels));
    assert.equal(isWithinJsonDepth(deep, maxMessageDepth), false);
    // And it can walk all of it when the limit allows.
    assert.equal(isWithinJsonDepth(deep, levels), true);
    assert.equal(isWithinJsonDepth(deep, levels - 1), false);
  });
});
