import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseEquals, showEquals } from '../../../dashboard/src/lib/rule-values.js';
import { isoFromLocal } from '../../../dashboard/src/lib/time-input.js';

test("the audience form reads a trait's equals as a JSON scalar when it is one, as text otherwise, and shows it back the same way", () => {
  const cases: [string, unknown][] = [
    ['pro', 'pro'],
    ['42', 42],
    ['-1.5', -1.5],
    ['true', true],
    ['false', false],
    ['null', null],
    ['"42"', '42'],
    ['"true"', 'true'],
    ['two words', 'two words'],
  ];
  for (const [typed, value] of cases) {
    assert.deepEqual(parseEquals(typed), value, typed);
    assert.deepEqual(parseEquals(showEquals(value)), value, `${typed} shown and read again`);
  }
  assert.equal(showEquals('42'), '"42"', 'text that looks like a number is quoted');
  assert.equal(showEquals('pro'), 'pro');
});

test('a datetime-local value is sent as UTC, an empty or broken one not at all', () => {
  assert.equal(isoFromLocal(''), undefined);
  assert.equal(isoFromLocal('not a time'), undefined);
  assert.equal(isoFromLocal('2026-03-01T10:00:00'), new Date('2026-03-01T10:00:00').toISOString());
});
