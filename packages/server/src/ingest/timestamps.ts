/**
 * Strict ISO 8601 date-times, as clients really send them, and the one form Ferry stores.
 *
 * `Date.parse` is not used: it accepts whatever the engine likes (`"2024-02-30"` rolls over
 * to March, `"Jan 2 2024"` parses, a date-time without offset is read in the server's local
 * zone), so the same client would be stored differently on two servers.
 */
import { maxTimestampMs, minTimestampMs } from '../model/timestamps.js';

const msPerMinute = 60_000;
// Date.UTC maps years 0..99 to 1900..1999; the Gregorian calendar repeats every 400 years,
// so those years are computed 400 years later and shifted back by the cycle's length.
const msPer400Years = 146_097 * 86_400_000;

/**
 * Parses an ISO 8601 date-time in the extended format and returns ms since the epoch, or
 * `undefined` when the string is not one. Accepted:
 *
 * - `YYYY-MM-DD` (midnight UTC), `YYYY-MM-DDTHH:MM`, `YYYY-MM-DDTHH:MM:SS`;
 * - a fraction of a second after the seconds, of any length, with `.` or `,` (ISO 8601
 *   allows both); digits after the third are truncated, not rounded;
 * - an offset after the time: `Z`, `±HH:MM`, `±HHMM` (analytics-go v2 writes `-0700`) or `±HH`;
 * - `t`, `z` in lower case, and a space instead of `T` (RFC 3339 §5.6 note).
 *
 * A date-time without offset is read as UTC, never in the server's zone, so the result does
 * not depend on where Ferry runs. Rejected: impossible dates and times (`02-30`, hour 24,
 * second 60: JavaScript time has no leap seconds), the basic format (`20240102T030405Z`),
 * week and ordinal dates, years outside 0000..9999 (including after applying the offset),
 * and leading or trailing white space.
 *
 * @example parseIsoTimestamp('2012-12-02T00:30:08-0700') // 1354433408000 (= 07:30:08Z)
 */
export function parseIsoTimestamp(s: string): number | undefined {
  const len = s.length;
  if (len < 10) return undefined;

  const year = digits(s, 0, 4);
  if (year < 0 || s.charCodeAt(4) !== 0x2d /* - */) return undefined;
  const month = digits(s, 5, 2);
  if (month < 1 || month > 12 || s.charCodeAt(7) !== 0x2d) return undefined;
  const day = digits(s, 8, 2);
  if (day < 1 || day > daysInMonth(year, month)) return undefined;
  if (len === 10) return utcMs(year, month, day, 0, 0, 0, 0);

  const sep = s.charCodeAt(10);
  if (sep !== 0x54 /* T */ && sep !== 0x74 /* t */ && sep !== 0x20 /* space */) return undefined;
  const hour = digits(s, 11, 2);
  if (hour < 0 || hour > 23 || s.charCodeAt(13) !== 0x3a /* : */) return undefined;
  const minute = digits(s, 14, 2);
  if (minute < 0 || minute > 59) return undefined;

  let i = 16;
  let second = 0;
  let millis = 0;
  if (s.charCodeAt(i) === 0x3a) {
    second = digits(s, i + 1, 2);
    if (second < 0 || second > 59) return undefined;
    i += 3;
    const c = s.charCodeAt(i);
    if (c === 0x2e /* . */ || c === 0x2c /* , */) {
      i++;
      const start = i;
      while (i < len) {
        const d = s.charCodeAt(i) - 0x30;
        if (!(d >= 0 && d <= 9)) break;
        if (i - start < 3) millis = millis * 10 + d;
        i++;
      }
      const count = i - start;
      if (count === 0) return undefined;
      if (count === 1) millis *= 100;
      else if (count === 2) millis *= 10;
    }
  }

  let offsetMinutes = 0;
  if (i < len) {
    const c = s.charCodeAt(i);
    if (c === 0x5a /* Z */ || c === 0x7a /* z */) {
      if (i + 1 !== len) return undefined;
    } else if (c === 0x2b /* + */ || c === 0x2d /* - */) {
      const offsetHours = digits(s, i + 1, 2);
      if (offsetHours < 0 || offsetHours > 23) return undefined;
      i += 3;
      let offsetMins = 0;
      if (i < len) {
        if (s.charCodeAt(i) === 0x3a) i++;
        offsetMins = digits(s, i, 2);
        if (offsetMins < 0 || offsetMins > 59) return undefined;
        i += 2;
        if (i !== len) return undefined;
      }
      offsetMinutes = (c === 0x2b ? 1 : -1) * (offsetHours * 60 + offsetMins);
    } else {
      return undefined;
    }
  }

  const ms = utcMs(year, month, day, hour, minute, second, millis) - offsetMinutes * msPerMinute;
  return ms < minTimestampMs || ms > maxTimestampMs ? undefined : ms;
}

/** The value of `count` decimal digits at `start`, or -1 if any is not a digit (or is missing). */
function digits(s: string, start: number, count: number): number {
  let value = 0;
  for (let i = start; i < start + count; i++) {
    const d = s.charCodeAt(i) - 0x30;
    // Written as a negated range so that NaN (past the end of the string) fails too.
    if (!(d >= 0 && d <= 9)) return -1;
    value = value * 10 + d;
  }
  return value;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) {
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    return leap ? 29 : 28;
  }
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number, millis: number): number {
  if (year < 100) return Date.UTC(year + 400, month - 1, day, hour, minute, second, millis) - msPer400Years;
  return Date.UTC(year, month - 1, day, hour, minute, second, millis);
}
