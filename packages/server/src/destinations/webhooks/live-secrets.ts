import type { SigningSecret, WebhooksSettings } from './settings.js';

/**
 * The secrets of a destination that sign at a given time. Expiry is read from the stored
 * settings at each attempt, on the attempt's clock, so every node stops signing with an
 * expired secret by itself, restarts included, whether or not the settings were rewritten.
 *
 * Each settings object is read once (a catalogue reload makes new ones): the ISO dates are
 * parsed then, and a destination with no expiring secret costs one lookup per attempt.
 */
interface Prepared {
  /** Every secret in order, with its end in ms (Infinity when it has none). */
  entries: readonly { secret: string; untilMs: number }[];
  /** The list itself when nothing expires, so the common case allocates nothing. */
  always: readonly string[] | undefined;
}

const prepared = new WeakMap<readonly SigningSecret[], Prepared>();

function prepare(list: readonly SigningSecret[]): Prepared {
  let p = prepared.get(list);
  if (p === undefined) {
    const entries = list.map((e) => ({ secret: e.secret, untilMs: e.expiresAt === undefined ? Infinity : Date.parse(e.expiresAt) }));
    p = { entries, always: entries.every((e) => e.untilMs === Infinity) ? entries.map((e) => e.secret) : undefined };
    prepared.set(list, p);
  }
  return p;
}

/** The secrets of `list` not expired at `nowMs`, in order: a secret stops signing at its `expiresAt`. */
export function liveSecrets(list: readonly SigningSecret[], nowMs: number): readonly string[] {
  const p = prepare(list);
  if (p.always !== undefined) return p.always;
  const out: string[] = [];
  for (const e of p.entries) if (nowMs < e.untilMs) out.push(e.secret);
  return out;
}

/**
 * The shared secrets that sign at `nowMs`: `sharedSecret` first, then each previous one not
 * expired, newest first. Empty when the destination has no shared secret.
 */
export function liveSharedSecrets(settings: WebhooksSettings, nowMs: number): readonly string[] {
  if (settings.sharedSecret === undefined) return [];
  const previous = settings.previousSharedSecrets;
  if (previous === undefined || previous.length === 0) return [settings.sharedSecret];
  return [settings.sharedSecret, ...liveSecrets(previous, nowMs)];
}
