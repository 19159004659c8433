/**
 * Cleanups of a test that run last-registered first, like a stack: a server stops before the
 * schema or receiver it uses goes away (node:test runs its own `after` hooks in order).
 */
export function cleanups(t: { after: (fn: () => Promise<void> | void) => void }): (fn: () => Promise<void> | void) => void {
  const stack: (() => Promise<void> | void)[] = [];
  t.after(async () => {
    for (const fn of stack.reverse()) await fn();
  });
  return (fn) => void stack.push(fn);
}
