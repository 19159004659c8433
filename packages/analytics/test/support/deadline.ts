/**
 * Longest a test waits for one thing to happen, in real time. Generous, because the machine
 * running the tests may be busy; it only bounds a wait that would otherwise hang.
 */
export const waitLimitMs = 10_000;

/** Settles as `promise` does, or rejects naming `what` once `ms` of real time have passed. */
export function within<T>(promise: Promise<T>, what: string, ms = waitLimitMs): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`gave up waiting for ${what} after ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
