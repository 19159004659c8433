import type { Ferry } from '../app.js';

/**
 * Drains and stops the server on SIGTERM or SIGINT (see `Lifecycle.stop`), then exits 0, or 1
 * when a step of the stop failed. A second signal exits at once with 130.
 */
export function stopOnSignals(ferry: Ferry, print: (line: string) => void, drainMs: number): void {
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) process.exit(130);
    signalled = true;
    print(`\n${signal}: draining for at least ${drainMs} ms (new requests get 503), finishing in-flight work, then stopping…`);
    ferry.stop({ drainMs }).then(
      () => process.exit(0),
      (err: unknown) => {
        ferry.logger.error({ err }, 'unclean stop');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
