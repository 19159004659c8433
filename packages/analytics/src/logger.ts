/** Where the client writes what it does. Any of console, pino or winston fits. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const silent: Logger = { debug() {}, warn() {}, error() {} };

/**
 * The logger used when none is passed: writes to stderr when `DEBUG` contains `analytics`
 * (the convention of the `debug` package, as the spec asks), and stays silent otherwise.
 */
export function defaultLogger(debugEnv: string | undefined): Logger {
  if (!debugEnv?.includes('analytics')) return silent;
  const write = (level: string, message: string, fields?: Record<string, unknown>) => {
    const tail = fields === undefined ? '' : ` ${JSON.stringify(fields)}`;
    console.error(`analytics ${level} ${message}${tail}`);
  };
  return {
    debug: (m, f) => write('debug', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
}
