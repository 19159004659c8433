import type { CircuitBreakerSettings, DestinationConfig } from '../config/model.js';
import { resolveCircuitBreaker } from '../config/delivery-policy-schema.js';
import type { ExchangeResult } from '../model/attempt.js';
import type { Clock } from '../util/clock.js';
import { redactUrl } from '../util/redact.js';
import type { SendGuard } from './guards.js';
import { isRetryable, retryableOf } from './retry-policy.js';

/** Where one URL's circuit stands. `closed` includes the ramp after a recovery. */
export type CircuitState = 'closed' | 'open' | 'half-open';

/** Why a circuit opened. */
export type CircuitOpenReason = 'consecutive_failures' | 'failure_rate' | 'probe_failed';

/** Why a circuit closed. */
export type CircuitCloseReason = 'probe_succeeded' | 'removed' | 'breaker_disabled';

/** The breaker's state changes, named `noun:verb`, forwarded into the bus by the worker. */
export interface CircuitEvents {
  /** A URL was taken out of service: nothing is sent to it before `probeAtMs`. */
  'breaker:opened': [{ destinationId: string; url: string; reason: CircuitOpenReason; failures: number; cooldownMs: number; probeAtMs: number }];
  /** The cool-down ended and one probe went out; nothing else is sent to the URL until it ends. */
  'breaker:half-open': [{ destinationId: string; url: string }];
  /** The probe succeeded (the ramp begins), or the circuit was dropped: its URL or destination removed or disabled (`removed`), or its breaker turned off. */
  'breaker:closed': [{ destinationId: string; url: string; reason: CircuitCloseReason; openForMs: number }];
}

/** One circuit as the per-destination stats show it (this node's view). */
export interface CircuitView {
  /** Redacted. */
  url: string;
  state: CircuitState;
  /** When it entered its state, ms since the epoch. */
  sinceMs: number;
  consecutiveFailures: number;
  /** The cool-down the next opening waits (the current one while open). */
  cooldownMs: number;
  /** While open: when the probe may go. */
  probeAtMs: number | null;
  /** While ramping after a recovery: how many exchanges may be in flight. */
  concurrencyLimit: number | null;
}

/** What decides whether one exchange goes out. */
export type Admission = 'send' | 'probe' | 'skip';

/** Buckets of the failure-rate window. */
const windowBuckets = 10;

/** One URL of one destination. */
class Circuit {
  state: CircuitState = 'closed';
  sinceMs: number;
  consecutiveFailures = 0;
  inFlight = 0;
  /** When the outage began: the opening from closed (a failed probe keeps it). */
  openedAtMs = 0;
  cooldownMs: number;
  probeAtMs = 0;
  /** Set while closed and ramping up after a probe succeeded. */
  rampStartMs: number | undefined;
  private readonly attempts = new Array<number>(windowBuckets).fill(0);
  private readonly failures = new Array<number>(windowBuckets).fill(0);
  private lastBucket = -1;

  constructor(
    readonly url: string,
    public settings: CircuitBreakerSettings,
    nowMs: number,
  ) {
    this.sinceMs = nowMs;
    this.cooldownMs = settings.cooldownMs;
  }

  /** Counts one exchange in the window; returns the window's attempts and failures. */
  count(failed: boolean, nowMs: number): { attempts: number; failures: number } {
    const bucketMs = this.settings.windowMs / windowBuckets;
    const bucket = Math.floor(nowMs / bucketMs);
    if (bucket !== this.lastBucket) {
      const stale = this.lastBucket < 0 ? windowBuckets : Math.min(windowBuckets, bucket - this.lastBucket);
      for (let i = 1; i <= stale; i++) {
        const at = (((this.lastBucket + i) % windowBuckets) + windowBuckets) % windowBuckets;
        this.attempts[at] = 0;
        this.failures[at] = 0;
      }
      this.lastBucket = bucket;
    }
    const at = bucket % windowBuckets;
    this.attempts[at]!++;
    if (failed) this.failures[at]!++;
    let attempts = 0;
    let failures = 0;
    for (let i = 0; i < windowBuckets; i++) {
      attempts += this.attempts[i]!;
      failures += this.failures[i]!;
    }
    return { attempts, failures };
  }

  resetWindow(): void {
    this.attempts.fill(0);
    this.failures.fill(0);
  }

  /**
   * How many more exchanges may start now: unbounded while closed, what is left of the ramp
   * while ramping, one probe once the cool-down is over, none while the probe is out.
   */
  room(nowMs: number, fullConcurrency: number): number {
    if (this.state === 'half-open') return 0;
    if (this.state === 'open') return nowMs >= this.probeAtMs ? 1 : 0;
    const limit = this.rampLimit(nowMs, fullConcurrency);
    return limit === undefined ? Infinity : limit - this.inFlight;
  }

  /** The ramp's concurrency now (1, 2, 4... a step apart), or `undefined` once it reached full concurrency. */
  rampLimit(nowMs: number, fullConcurrency: number): number | undefined {
    if (this.rampStartMs === undefined) return undefined;
    const step = this.settings.rampStepMs;
    const doublings = step <= 0 ? Infinity : Math.floor((nowMs - this.rampStartMs) / step);
    const limit = doublings >= 31 ? Infinity : 2 ** doublings;
    if (limit < fullConcurrency) return limit;
    // Fully back: the next outage starts again from the first cool-down.
    this.rampStartMs = undefined;
    this.cooldownMs = this.settings.cooldownMs;
    return undefined;
  }
}

/** A destination's circuits, for the configuration they were made for. */
interface DestinationCircuits {
  destination: DestinationConfig;
  settings: CircuitBreakerSettings;
  circuits: Map<string, Circuit>;
  /** In the destination's target order. */
  list: Circuit[];
}

/** What the breakers need. */
export interface CircuitBreakersOptions {
  clock: Clock;
  /** The targets (URLs) of a destination, from its type; `undefined` for a type without targets, which gets no breaker. */
  targetsOf(destination: DestinationConfig): readonly string[] | undefined;
  /** The concurrency a ramp grows to: the per-destination limit. */
  perDestinationConcurrency: number;
  /** Each state change. */
  emit<K extends keyof CircuitEvents>(name: K, ...payload: CircuitEvents[K]): void;
}

/**
 * A circuit breaker per URL of each destination, in this node's memory
 * (docs/delivery.md, "Circuit breaker").
 *
 * A URL opens after `failures` failures in a row, or once `failureRate` of the exchanges of
 * the last `windowMs` failed (at least `minimumAttempts` of them). A failure is what the
 * destination retries (by default a timeout, a connection failure, 408, 429, 5xx); any other
 * answer shows the receiver is there. Open, nothing is sent to the URL until its cool-down
 * ends; then one exchange is the probe (half-open). A failed probe opens it again for a
 * cool-down `cooldownMultiplier` times longer (up to `maxCooldownMs`); a successful one closes
 * it, and its concurrency ramps up from 1, doubling every `rampStepMs`, to full.
 *
 * As a {@link SendGuard} it holds a destination every URL of which is cooling down (its jobs
 * go back unattempted) and lets a send start only while some URL has room (a probe, the
 * ramp). Within an attempt, {@link admit} skips a URL that has none: its result is
 * `circuit_open`, a retryable failure of that URL.
 */
export class CircuitBreakers implements SendGuard {
  private readonly byDestination = new Map<string, DestinationCircuits>();

  constructor(private readonly o: CircuitBreakersOptions) {}

  holdUntil(destination: DestinationConfig, nowMs: number): number | undefined {
    const d = this.circuitsOf(destination);
    if (!d) return undefined;
    let until = Infinity;
    for (const c of d.list) {
      if (c.state !== 'open' || nowMs >= c.probeAtMs) return undefined;
      until = Math.min(until, c.probeAtMs);
    }
    return until;
  }

  mayStart(destination: DestinationConfig, nowMs: number): boolean {
    const d = this.circuitsOf(destination);
    if (!d) return true;
    let some = false;
    for (const c of d.list) {
      const room = c.room(nowMs, this.o.perDestinationConcurrency);
      // A URL ramping up after a recovery is not skipped, it is waited for: a skip beside
      // another URL's 2xx would end the event without it ever reaching this one.
      if (c.state === 'closed' && room <= 0) return false;
      if (room > 0) some = true;
    }
    return some;
  }

  /**
   * Whether an exchange with `url` goes out now: `send`, `probe` (the one after a cool-down;
   * the circuit is half-open until its result) or `skip`. Every exchange admitted must be
   * followed by {@link record} of its result.
   */
  admit(destination: DestinationConfig, url: string): Admission {
    const d = this.circuitsOf(destination);
    const c = d?.circuits.get(url);
    if (!c) return 'send';
    const nowMs = this.o.clock.now();
    // A closed URL is always sent to, over its ramp if jobs started together got past
    // mayStart at once: only a URL cooling down (or with its probe out) is skipped.
    if (c.state !== 'closed' && c.room(nowMs, this.o.perDestinationConcurrency) <= 0) return 'skip';
    c.inFlight++;
    if (c.state !== 'open') return 'send';
    c.state = 'half-open';
    c.sinceMs = nowMs;
    this.o.emit('breaker:half-open', { destinationId: destination.id, url: redactUrl(url) });
    return 'probe';
  }

  /** The result of an exchange {@link admit} let go. */
  record(destination: DestinationConfig, url: string, admission: Admission, result: ExchangeResult): void {
    const d = this.circuitsOf(destination);
    const c = d?.circuits.get(url);
    if (!c || admission === 'skip') return;
    c.inFlight = Math.max(0, c.inFlight - 1);
    const nowMs = this.o.clock.now();
    const failed = isRetryable(result, retryableOf(destination));
    const base = { destinationId: destination.id, url: redactUrl(url) };
    if (admission === 'probe') {
      if (c.state !== 'half-open') return;
      if (failed) {
        c.consecutiveFailures++;
        c.cooldownMs = Math.min(c.settings.maxCooldownMs, Math.round(c.cooldownMs * c.settings.cooldownMultiplier));
        this.open(c, base, 'probe_failed', nowMs);
        return;
      }
      c.state = 'closed';
      c.sinceMs = nowMs;
      c.consecutiveFailures = 0;
      c.resetWindow();
      c.rampStartMs = nowMs;
      this.o.emit('breaker:closed', { ...base, reason: 'probe_succeeded', openForMs: nowMs - c.openedAtMs });
      return;
    }
    // A result of an exchange sent before the circuit opened changes nothing any more.
    if (c.state !== 'closed') return;
    const { attempts, failures } = c.count(failed, nowMs);
    if (!failed) {
      c.consecutiveFailures = 0;
      return;
    }
    c.consecutiveFailures++;
    const s = c.settings;
    if (c.consecutiveFailures >= s.failures) this.open(c, base, 'consecutive_failures', nowMs);
    else if (attempts >= s.minimumAttempts && failures / attempts >= s.failureRate) this.open(c, base, 'failure_rate', nowMs);
  }

  /** Whether a destination (as configured now) has circuits: its breaker is on and its type has targets. */
  covers(destination: DestinationConfig): boolean {
    return this.circuitsOf(destination) !== undefined;
  }

  /** This node's circuits of a destination, in its URLs' order; empty when it has no breaker. */
  view(destination: DestinationConfig): CircuitView[] {
    const d = this.circuitsOf(destination);
    if (!d) return [];
    const nowMs = this.o.clock.now();
    return d.list.map((c) => ({
      url: redactUrl(c.url),
      state: c.state,
      sinceMs: c.sinceMs,
      consecutiveFailures: c.consecutiveFailures,
      cooldownMs: c.cooldownMs,
      probeAtMs: c.state === 'open' ? c.probeAtMs : null,
      concurrencyLimit: c.state === 'closed' ? (c.rampLimit(nowMs, this.o.perDestinationConcurrency) ?? null) : null,
    }));
  }

  /** Forgets the circuits of destinations not in `ids` (deleted or disabled). */
  forget(ids: ReadonlySet<string>): void {
    for (const [id, d] of [...this.byDestination]) {
      if (ids.has(id)) continue;
      this.byDestination.delete(id);
      this.closeAll(d.list, id, 'removed');
    }
  }

  private open(c: Circuit, base: { destinationId: string; url: string }, reason: CircuitOpenReason, nowMs: number): void {
    const failures = c.consecutiveFailures;
    if (c.state === 'closed') c.openedAtMs = nowMs;
    c.state = 'open';
    c.sinceMs = nowMs;
    c.probeAtMs = nowMs + c.cooldownMs;
    c.rampStartMs = undefined;
    this.o.emit('breaker:opened', { ...base, reason, failures, cooldownMs: c.cooldownMs, probeAtMs: c.probeAtMs });
  }

  /**
   * The circuits of a destination's current configuration: made at its first send, kept
   * (state and all) across a change of its other settings, those of URLs no longer listed
   * dropped; none when its breaker is off or its type has no targets.
   */
  private circuitsOf(destination: DestinationConfig): DestinationCircuits | undefined {
    const known = this.byDestination.get(destination.id);
    if (known?.destination === destination) return known.list.length === 0 ? undefined : known;
    const settings = resolveCircuitBreaker(destination.circuitBreaker);
    const targets = settings.enabled ? (this.o.targetsOf(destination) ?? []) : [];
    const nowMs = this.o.clock.now();
    const circuits = new Map<string, Circuit>();
    for (const url of targets) {
      const c = known?.circuits.get(url) ?? new Circuit(url, settings, nowMs);
      c.settings = settings;
      circuits.set(url, c);
    }
    if (known)
      this.closeAll(
        known.list.filter((c) => circuits.get(c.url) !== c),
        destination.id,
        settings.enabled ? 'removed' : 'breaker_disabled',
      );
    const d: DestinationCircuits = { destination, settings, circuits, list: [...circuits.values()] };
    this.byDestination.set(destination.id, d);
    return d.list.length === 0 ? undefined : d;
  }

  private closeAll(circuits: readonly Circuit[], destinationId: string, reason: CircuitCloseReason): void {
    const nowMs = this.o.clock.now();
    for (const c of circuits) {
      if (c.state === 'closed') continue;
      this.o.emit('breaker:closed', { destinationId, url: redactUrl(c.url), reason, openForMs: nowMs - c.openedAtMs });
    }
  }
}
