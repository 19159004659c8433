/**
 * Shared pieces of the fault-injection suite (`npm run test:faults`): the long-form switch,
 * a seeded random generator whose seed every test prints, and small bounded waits.
 */

/** `FERRY_FAULTS_LONG=1` runs the long forms: more kill cycles, more fuzz runs. */
export const longForm = process.env['FERRY_FAULTS_LONG'] === '1';

/** The seed of this run: `FERRY_FAULTS_SEED` to replay one, else a fresh one (printed by each test). */
export function faultSeed(): number {
  const fromEnv = process.env['FERRY_FAULTS_SEED'];
  if (fromEnv !== undefined && fromEnv !== '') {
    const n = Number(fromEnv);
    if (!Number.isSafeInteger(n)) throw new Error(`FERRY_FAULTS_SEED must be an integer, got ${fromEnv}`);
    return n >>> 0;
  }
  return (Date.now() ^ (process.pid << 16)) >>> 0;
}

/** mulberry32: a small, fast, seedable generator of numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in [min, max] from `random`. */
export function randomInt(random: () => number, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

export { within } from '../helpers/within.js';

/** Basic auth header value for a write key. */
export function basicAuth(writeKey: string): string {
  return 'Basic ' + Buffer.from(`${writeKey}:`).toString('base64');
}
