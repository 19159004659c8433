/**
 * The ISO 8601 date-times the ingestion API accepts, checked at call time so a timestamp the
 * server would refuse never enters the queue.
 *
 * `Date.parse` is not enough: it takes `"Jan 2 2024"` and RFC 1123 dates, which the server
 * refuses, and rolls `"2024-02-30"` over to March.
 */

// YYYY-MM-DD, then optionally [T t space]HH:MM[:SS[(.|,)fraction]] and an offset
// (Z, z, ±HH, ±HHMM, ±HH:MM); an offset needs a time.
const isoDateTime = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?)?)?$/;

/** `0000-01-01T00:00:00.000Z`, the earliest instant the server stores. */
const minMs = -62_167_219_200_000;
/** `9999-12-31T23:59:59.999Z`, the latest instant the server stores. */
const maxMs = 253_402_300_799_999;

/** True when `ms` is an instant the server can store: a four-digit UTC year. */
export function isStorableMs(ms: number): boolean {
  return ms >= minMs && ms <= maxMs;
}

/**
 * Milliseconds since the epoch of an ISO 8601 date-time in the extended format, or
 * `undefined` when the server would refuse it. Accepted: a date alone (midnight UTC); a time
 * with minutes, seconds, and a fraction of any length after `.` or `,`; an offset `Z`,
 * `±HH`, `±HHMM` or `±HH:MM` (none means UTC); `t`, `z` and a space instead of `T`.
 * Refused: impossible dates and times (`02-30`, hour 24, second 60), the basic format,
 * week and ordinal dates, white space around the value, and instants outside years
 * 0000..9999 once the offset is applied.
 *
 * @example parseIsoTimestamp('2019-05-06T01:02:03-0700') // Date.UTC(2019, 4, 6, 8, 2, 3)
 */
export function parseIsoTimestamp(s: string): number | undefined {
  const m = isoDateTime.exec(s);
  if (!m) return undefined;
  const [year, month, day] = [m[1], m[2], m[3]].map(Number) as [number, number, number];
  const hour = Number(m[4] ?? 0);
  const minute = Number(m[5] ?? 0);
  const second = Number(m[6] ?? 0);
  // Digits after the milliseconds are dropped, as the server does.
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  const offsetHours = Number(m[9] ?? 0);
  const offsetMinutes = Number(m[10] ?? 0);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) return undefined;

  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not read years 0..99 as 1900..1999.
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, millis);
  const sign = m[8] === '-' ? -1 : 1;
  const ms = date.getTime() - sign * (offsetHours * 60 + offsetMinutes) * 60_000;
  return isStorableMs(ms) ? ms : undefined;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}
