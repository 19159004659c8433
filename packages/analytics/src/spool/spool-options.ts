import { AnalyticsError } from '../errors.js';

/** When the spool asks the OS to put its writes on disk (`fsync`). */
export type FsyncPolicy = 'interval' | 'batch' | 'call';

/** Settings of the durable spool; see the README's "Durable spool". */
export interface SpoolOptions {
  /** Directory of the journal; created if missing. One client per directory (a lock enforces it). */
  dir: string;
  /** Bound on the bytes of unconfirmed messages in the journal. Default 64,000,000. */
  maxBytes?: number;
  /** `interval` (default): every `fsyncIntervalMs`; `batch`: before each request; `call`: in every call. */
  fsync?: FsyncPolicy;
  /** Period of the `interval` policy in ms. Default 100. */
  fsyncIntervalMs?: number;
  /** Size at which the journal starts a new segment file, in bytes. Default 4,000,000. */
  segmentBytes?: number;
}

/** Spool settings after defaults and checks. */
export type ResolvedSpoolOptions = Required<SpoolOptions>;

/** Defaults of the spool's settings. */
export const spoolDefaults = {
  maxBytes: 64_000_000,
  fsync: 'interval' as FsyncPolicy,
  fsyncIntervalMs: 100,
  segmentBytes: 4_000_000,
} as const;

const integerSettings = { maxBytes: 1, fsyncIntervalMs: 1, segmentBytes: 1_000 } as const;
const knownKeys = new Set(['dir', 'fsync', ...Object.keys(integerSettings)]);

function fail(message: string): never {
  throw new AnalyticsError('invalid_option', message);
}

/** Applies the spool's defaults and checks every value; throws `invalid_option`. */
export function resolveSpoolOptions(input: unknown): ResolvedSpoolOptions {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) fail('`spool` must be an object such as { dir: "./spool" }.');
  const raw = input as Record<string, unknown>;
  for (const key of Object.keys(raw)) if (!knownKeys.has(key)) fail(`Unknown option \`spool.${key}\`.`);
  const dir = raw['dir'];
  if (typeof dir !== 'string' || dir.length === 0) fail('`spool.dir` must be a non-empty path.');
  const ints = {} as Record<keyof typeof integerSettings, number>;
  for (const [key, min] of Object.entries(integerSettings) as [keyof typeof integerSettings, number][]) {
    const v = raw[key] ?? spoolDefaults[key];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) fail(`\`spool.${key}\` must be an integer >= ${min}.`);
    ints[key] = v;
  }
  const fsync = raw['fsync'] ?? spoolDefaults.fsync;
  if (fsync !== 'interval' && fsync !== 'batch' && fsync !== 'call') fail('`spool.fsync` must be "interval", "batch" or "call".');
  return { dir, fsync, ...ints };
}
