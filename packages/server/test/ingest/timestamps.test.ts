import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { parseIsoTimestamp } from '../../src/ingest/timestamps.js';
import { formatUtcMs, isFormattableMs, maxTimestampMs, minTimestampMs } from '../../src/model/timestamps.js';

function parsed(s: string): string | undefined {
  const ms = parseIsoTimestamp(s);
  return ms === undefined ? undefined : formatUtcMs(ms);
}

describe('parseIsoTimestamp: accepted forms', () => {
  // [case, input, expected UTC form]
  const cases: [string, string, string][] = [
    ['P01 date only is midnight UTC', '2024-01-02', '2024-01-02T00:00:00.000Z'],
    ['P02 hours and minutes, no offset is UTC', '2024-01-02T03:04', '2024-01-02T03:04:00.000Z'],
    ['P03 seconds, no offset is UTC', '2024-01-02T03:04:05', '2024-01-02T03:04:05.000Z'],
    ['P04 Z without milliseconds', '2024-01-02T03:04:05Z', '2024-01-02T03:04:05.000Z'],
    ['P05 milliseconds', '2024-01-02T03:04:05.678Z', '2024-01-02T03:04:05.678Z'],
    ['P06 one fractional digit is tenths', '2024-01-02T03:04:05.6Z', '2024-01-02T03:04:05.600Z'],
    ['P07 two fractional digits are hundredths', '2024-01-02T03:04:05.67Z', '2024-01-02T03:04:05.670Z'],
    ['P08 microseconds are truncated', '2024-01-02T03:04:05.678901Z', '2024-01-02T03:04:05.678Z'],
    ['P09 nanoseconds truncate, never round up a second', '2024-01-02T03:04:05.999999999Z', '2024-01-02T03:04:05.999Z'],
    ['P10 a long fraction', '2024-01-02T03:04:05.1234567890123456789Z', '2024-01-02T03:04:05.123Z'],
    ['P11 comma as decimal sign', '2024-01-02T03:04:05,678Z', '2024-01-02T03:04:05.678Z'],
    ['P12 analytics-go v2: -0700, no milliseconds', '2012-12-02T00:30:08-0700', '2012-12-02T07:30:08.000Z'],
    ['P13 -07:00 with milliseconds', '2012-12-02T00:30:08.276-07:00', '2012-12-02T07:30:08.276Z'],
    ['P14 +05:30', '2024-01-02T03:04:05+05:30', '2024-01-01T21:34:05.000Z'],
    ['P15 +0530', '2024-01-02T03:04:05+0530', '2024-01-01T21:34:05.000Z'],
    ['P16 +05 (hours only)', '2024-01-02T03:04:05+05', '2024-01-01T22:04:05.000Z'],
    ['P17 -00:00 is UTC', '2024-01-02T03:04:05-00:00', '2024-01-02T03:04:05.000Z'],
    ['P18 fractional micros with an offset', '2024-01-02T03:04:05.123456+01:00', '2024-01-02T02:04:05.123Z'],
    ['P19 lower-case t and z', '2024-01-02t03:04:05z', '2024-01-02T03:04:05.000Z'],
    ['P20 space instead of T', '2024-01-02 03:04:05.678Z', '2024-01-02T03:04:05.678Z'],
    ['P21 no seconds, with offset', '2024-01-02T03:04+01:00', '2024-01-02T02:04:00.000Z'],
    ['P22 an offset moves the date across a year', '2023-12-31T23:30:00-01:00', '2024-01-01T00:30:00.000Z'],
    ['P23 Feb 29 of a leap year', '2024-02-29T12:00:00Z', '2024-02-29T12:00:00.000Z'],
    ['P24 Feb 29 of a 400-year leap year', '2000-02-29', '2000-02-29T00:00:00.000Z'],
    ['P25 before the epoch', '1969-12-31T23:59:59.999Z', '1969-12-31T23:59:59.999Z'],
    ['P26 year 0000 is the earliest', '0000-01-01T00:00:00Z', '0000-01-01T00:00:00.000Z'],
    ['P27 years below 100 are not read as 19xx', '0050-06-15T00:00:00Z', '0050-06-15T00:00:00.000Z'],
    ['P28 year 9999 is the latest', '9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    ['P29 +14:00 (Kiribati)', '2024-01-02T12:00:00+14:00', '2024-01-01T22:00:00.000Z'],
    ['P30 -12:00', '2024-01-02T12:00:00-12:00', '2024-01-03T00:00:00.000Z'],
  ];
  for (const [name, input, expected] of cases) {
    test(`${name}: ${input}`, () => assert.equal(parsed(input), expected));
  }
});

describe('parseIsoTimestamp: rejected forms', () => {
  const cases: [string, string][] = [
    ['R01 empty', ''],
    ['R02 year only', '2024'],
    ['R03 one-digit month', '2024-1-02'],
    ['R04 one-digit day', '2024-01-2'],
    ['R05 month 13', '2024-13-01'],
    ['R06 month 00', '2024-00-10'],
    ['R07 day 00', '2024-01-00'],
    ['R08 Feb 30', '2024-02-30'],
    ['R09 Feb 29 of a common year', '2023-02-29T00:00:00Z'],
    ['R10 Feb 29 of 1900 (century, not leap)', '1900-02-29'],
    ['R11 Apr 31', '2024-04-31'],
    ['R12 hour 24', '2024-01-02T24:00:00Z'],
    ['R13 hour 25', '2024-01-02T25:00Z'],
    ['R14 minute 60', '2024-01-02T03:60Z'],
    ['R15 second 60 (leap second)', '2024-01-02T03:04:60Z'],
    ['R16 decimal sign without digits', '2024-01-02T03:04:05.Z'],
    ['R17 trailing decimal sign', '2024-01-02T03:04:05.'],
    ['R18 fractional minutes', '2024-01-02T03:04.5Z'],
    ['R19 hour without minutes', '2024-01-02T03Z'],
    ['R20 hour only, no offset', '2024-01-02T03'],
    ['R21 date with an offset but no time', '2024-01-02Z'],
    ['R22 unknown separator', '2024-01-02X03:04:05Z'],
    ['R23 space before Z', '2024-01-02T03:04:05 Z'],
    ['R24 leading space', ' 2024-01-02'],
    ['R25 trailing space', '2024-01-02 '],
    ['R26 trailing newline', '2024-01-02T03:04:05Z\n'],
    ['R27 one-digit offset hour', '2024-01-02T03:04:05+5'],
    ['R28 offset hour 24', '2024-01-02T03:04:05+24:00'],
    ['R29 offset minute 60', '2024-01-02T03:04:05+05:60'],
    ['R30 one-digit offset minute', '2024-01-02T03:04:05+05:3'],
    ['R31 three-digit offset minute', '2024-01-02T03:04:05+05:300'],
    ['R32 two Zs', '2024-01-02T03:04:05ZZ'],
    ['R33 Z then an offset', '2024-01-02T03:04:05Z+01:00'],
    ['R34 junk after Z', '2024-01-02T03:04:05.678Zjunk'],
    ['R35 basic format', '20240102T030405Z'],
    ['R36 expanded year', '+002024-01-02T00:00:00Z'],
    ['R37 negative year', '-2024-01-02'],
    ['R38 week date', '2024-W01-1'],
    ['R39 ordinal date', '2024-002'],
    ['R40 before year 0000 once the offset is applied', '0000-01-01T00:00:00+01:00'],
    ['R41 after year 9999 once the offset is applied', '9999-12-31T23:59:59-01:00'],
    ['R42 what Date.parse accepts but ISO does not', 'Jan 2 2024'],
    ['R43 RFC 2822', 'Tue, 02 Jan 2024 03:04:05 GMT'],
    ['R44 full-width digits', '２０２４-01-02'],
    ['R45 letter inside the fraction', '2024-01-02T03:04:05.6a7Z'],
    ['R46 epoch number as a string', '1704164645678'],
    ['R47 slashes', '2024/01/02'],
  ];
  for (const [name, input] of cases) {
    test(`${name}: ${JSON.stringify(input)}`, () => assert.equal(parseIsoTimestamp(input), undefined));
  }
});

describe('parseIsoTimestamp: properties', () => {
  test('P31 parse(format(ms)) is ms for every instant in range', () => {
    fc.assert(
      fc.property(fc.integer({ min: minTimestampMs, max: maxTimestampMs }), (ms) => parseIsoTimestamp(formatUtcMs(ms)) === ms),
      { numRuns: 2000 },
    );
  });

  test('P32 agrees with Date.parse on the ECMAScript form with any offset', () => {
    const pad = (n: number, width: number) => String(n).padStart(width, '0');
    fc.assert(
      fc.property(
        fc.record({
          year: fc.integer({ min: 1, max: 9998 }),
          month: fc.integer({ min: 1, max: 12 }),
          day: fc.integer({ min: 1, max: 28 }),
          hour: fc.integer({ min: 0, max: 23 }),
          minute: fc.integer({ min: 0, max: 59 }),
          second: fc.integer({ min: 0, max: 59 }),
          millis: fc.integer({ min: 0, max: 999 }),
          sign: fc.constantFrom('+', '-'),
          offsetHours: fc.integer({ min: 0, max: 23 }),
          offsetMinutes: fc.integer({ min: 0, max: 59 }),
        }),
        (t) => {
          const s =
            `${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)}T${pad(t.hour, 2)}:${pad(t.minute, 2)}:` +
            `${pad(t.second, 2)}.${pad(t.millis, 3)}${t.sign}${pad(t.offsetHours, 2)}:${pad(t.offsetMinutes, 2)}`;
          return parseIsoTimestamp(s) === Date.parse(s);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('formatUtcMs', () => {
  const cases: [string, number, string][] = [
    ['F01 the epoch', 0, '1970-01-01T00:00:00.000Z'],
    ['F02 milliseconds always written', 1_704_164_645_000, '2024-01-02T03:04:05.000Z'],
    ['F03 a usual instant', 1_704_164_645_678, '2024-01-02T03:04:05.678Z'],
    ['F04 before the epoch', -1, '1969-12-31T23:59:59.999Z'],
    ['F05 the earliest', minTimestampMs, '0000-01-01T00:00:00.000Z'],
    ['F06 the latest', maxTimestampMs, '9999-12-31T23:59:59.999Z'],
  ];
  for (const [name, ms, expected] of cases) {
    test(name, () => assert.equal(formatUtcMs(ms), expected));
  }

  const misuse: [string, number][] = [
    ['F07 NaN', Number.NaN],
    ['F08 Infinity', Number.POSITIVE_INFINITY],
    ['F09 one ms before year 0000', minTimestampMs - 1],
    ['F10 one ms after year 9999', maxTimestampMs + 1],
  ];
  for (const [name, ms] of misuse) {
    test(`${name} throws RangeError`, () => {
      assert.throws(() => formatUtcMs(ms), RangeError);
      assert.equal(isFormattableMs(ms), false);
    });
  }
});
