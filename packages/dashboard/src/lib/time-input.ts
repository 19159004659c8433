/**
 * The value of a `datetime-local` input (the browser's local time, no zone) as an ISO time
 * in UTC for the admin API, or undefined when empty or not a time.
 */
export function isoFromLocal(value: string): string | undefined {
  if (value.trim() === '') return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}
