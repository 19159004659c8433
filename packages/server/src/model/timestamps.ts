/**
 * The one form in which Ferry stores and sends every timestamp. Ingestion writes it, and
 * each destination type renders its bodies with it.
 */

/** `0000-01-01T00:00:00.000Z`: the earliest instant {@link formatUtcMs} writes with a four-digit year. */
export const minTimestampMs = -62_167_219_200_000;
/** `9999-12-31T23:59:59.999Z`: the latest instant {@link formatUtcMs} writes with a four-digit year. */
export const maxTimestampMs = 253_402_300_799_999;

/**
 * Writes ms since the epoch the way Ferry stores and sends every timestamp:
 * `2024-01-02T03:04:05.678Z` (UTC, always milliseconds, four-digit year).
 *
 * @throws RangeError when `ms` is not finite or lies outside {@link minTimestampMs}..{@link maxTimestampMs}:
 * callers check the range first, so this is misuse.
 */
export function formatUtcMs(ms: number): string {
  if (!isFormattableMs(ms)) {
    throw new RangeError(`formatUtcMs: ${ms} is outside years 0000..9999`);
  }
  // For years 0000..9999 toISOString writes exactly this form; it is native and fast.
  return new Date(ms).toISOString();
}

/** True when `ms` can be written by {@link formatUtcMs} (false for NaN and infinities). */
export function isFormattableMs(ms: number): boolean {
  return ms >= minTimestampMs && ms <= maxTimestampMs;
}
