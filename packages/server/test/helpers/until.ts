/** One turn of the event loop: what a timer that ran would have settled by then. */
export const turn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/** How often {@link until} looks: often enough not to slow a test, rarely enough not to spin a core. */
const pollEveryMs = 5;

/** Waits, looking every few milliseconds, until `condition` holds; fails after `deadlineMs`. */
export async function until(condition: () => boolean, what: string, deadlineMs = 5000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up after ${deadlineMs} ms waiting for ${what}`);
    await new Promise<void>((resolve) => setTimeout(resolve, pollEveryMs));
  }
}
