/**
 * Resolves with `promise`, or rejects after `ms` with `what` in the message. For awaiting
 * something that should happen (an arrival, an exit, a stop) without hanging the suite if it
 * does not.
 */
export async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
