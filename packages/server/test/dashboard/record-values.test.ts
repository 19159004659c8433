import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
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

/**
 * `isoFromLocal` run in a Node process of its own whose local time is `timeZone`: the test's
 * own process may well run in UTC, where a local time and UTC read alike whatever the code does.
 */
async function isoFromLocalIn(timeZone: string, values: string[]): Promise<(string | undefined)[]> {
  const module = new URL('../../../dashboard/src/lib/time-input.ts', import.meta.url).href;
  const script = `const { isoFromLocal } = await import(${JSON.stringify(module)});
    console.log(JSON.stringify(process.argv.slice(1).map((v) => isoFromLocal(v) ?? null)));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, ...values], {
    env: { ...process.env, TZ: timeZone },
  });
  return (JSON.parse(stdout) as (string | null)[]).map((v) => v ?? undefined);
}

test('a datetime-local value is sent as UTC from the local time of the browser, an empty or broken one not at all', async () => {
  const values = ['2026-03-01T10:00:00', '2026-07-01T10:00', '2026-03-08T01:30', '', 'not a time'];
  // New York is 5 hours behind UTC in winter and 4 in summer (from 2026-03-08 02:00 local); Kolkata 5:30 ahead all year.
  assert.deepEqual(await isoFromLocalIn('America/New_York', values), [
    '2026-03-01T15:00:00.000Z',
    '2026-07-01T14:00:00.000Z',
    '2026-03-08T06:30:00.000Z',
    undefined,
    undefined,
  ]);
  assert.deepEqual(await isoFromLocalIn('Asia/Kolkata', values), [
    '2026-03-01T04:30:00.000Z',
    '2026-07-01T04:30:00.000Z',
    '2026-03-07T20:00:00.000Z',
    undefined,
    undefined,
  ]);
  assert.equal(isoFromLocal(''), undefined);
  assert.equal(isoFromLocal('not a time'), undefined);
});
