import type { Logger } from 'pino';
import type { DestinationConfig, RateLimit } from '../config/model.js';
import type { RateLimitBuckets } from '../store/rate-limit-buckets.js';
import type { Clock } from '../util/clock.js';
import { RepeatedErrorLog } from '../util/repeated-error-log.js';
import type { SendGuard } from './guards.js';
import { TokenBucket } from './token-bucket.js';

/**
 * How long a node holds a destination while it waits for the store's answer to a request for
 * tokens: about one grant's worth of time, so that at the limit the answer is there when the
 * hold ends.
 */
export const grantWaitMs = 100;

/** Once per this long while taking grants keeps failing the same way, one log line. */
const grantErrorLogIntervalMs = 60_000;

/**
 * Tokens a node takes from a shared bucket at once, and what a held destination waits to have
 * in a bucket of its own: a tenth of a second's worth (at least 1, at most the burst). More
 * would let a node hold more than its share (the bound on overshoot grows with it); fewer would
 * ask the store more often.
 */
export function grantSize(limit: RateLimit): number {
  return Math.min(limit.burst, Math.max(1, Math.ceil(limit.perSecond / 10)));
}

/** What {@link RateLimitGuard} needs. */
export interface RateLimitGuardOptions {
  /** A cluster's shared buckets; undefined: a bucket per destination in memory (one process owns the store). */
  buckets: RateLimitBuckets | undefined;
  clock: Clock;
  logger: Logger;
  /** A destination's sends are held until `untilMs` by its rate limit (metrics count it). */
  onHeld?(destinationId: string, untilMs: number): void;
}

/** Tokens a node took from a destination's shared bucket and has not spent. */
interface Grant {
  /** The limit it was taken under (`perSecond/burst`): a changed limit starts afresh. */
  limitKey: string;
  tokens: number;
  usableFromMs: number;
  /** A request for more is on its way to the store. */
  asking: boolean;
}

/**
 * The rate limit of each destination that has one (`rateLimit: { perSecond, burst }`), as a
 * send guard: one token per attempt, and a destination without a token is held until it will
 * have some. Its jobs wait in the queue unsent (see `guards.ts`): nothing is dropped, and the
 * retry window of a job never attempted does not start.
 *
 * With shared buckets (a PostgreSQL cluster), the check before each send (synchronous) spends
 * only tokens this node already holds; when it has none it asks the store for a grant
 * ({@link grantSize}) and holds the destination meanwhile. The store hands grants out in order
 * and never faster than the limit, so the whole cluster stays at it: over any time T, at most
 * `burst + perSecond × T` attempts plus one grant per node (docs/delivery.md, "Rate limit").
 */
export class RateLimitGuard implements SendGuard {
  private readonly local = new Map<string, TokenBucket>();
  private readonly grants = new Map<string, Grant>();
  private readonly asking = new Set<Promise<void>>();
  private readonly grantErrors: RepeatedErrorLog;

  constructor(private readonly o: RateLimitGuardOptions) {
    this.grantErrors = new RepeatedErrorLog({
      logger: o.logger,
      clock: o.clock,
      intervalMs: grantErrorLogIntervalMs,
      message: 'could not take rate limit tokens from the store; rate-limited destinations wait',
      recoveredMessage: 'rate limit tokens are taken from the store again',
    });
  }

  holdUntil(destination: DestinationConfig, nowMs: number): number | undefined {
    const limit = destination.rateLimit;
    if (limit === undefined) return undefined;
    const until = this.o.buckets ? this.fromGrant(destination.id, limit, nowMs) : this.fromBucket(destination.id, limit, nowMs);
    if (until !== undefined) this.o.onHeld?.(destination.id, until);
    return until;
  }

  /** Resolves once every request for tokens on its way has been answered (tests). */
  async settled(): Promise<void> {
    while (this.asking.size > 0) await Promise.allSettled([...this.asking]);
  }

  private fromBucket(destinationId: string, limit: RateLimit, nowMs: number): number | undefined {
    let bucket = this.local.get(destinationId);
    if (bucket === undefined || bucket.limit.perSecond !== limit.perSecond || bucket.limit.burst !== limit.burst)
      this.local.set(destinationId, (bucket = new TokenBucket(limit, nowMs)));
    if (bucket.tryTake(nowMs)) return undefined;
    // Held until a grant's worth is there, not one token: one hold (and one hand-back of the
    // jobs held ready) per tenth of a second at most, rather than one per token.
    return bucket.readyAt(grantSize(limit), nowMs);
  }

  private fromGrant(destinationId: string, limit: RateLimit, nowMs: number): number | undefined {
    const limitKey = `${limit.perSecond}/${limit.burst}`;
    let grant = this.grants.get(destinationId);
    if (grant === undefined || grant.limitKey !== limitKey) this.grants.set(destinationId, (grant = { limitKey, tokens: 0, usableFromMs: 0, asking: false }));
    if (grant.tokens > 0) {
      if (nowMs < grant.usableFromMs) return grant.usableFromMs;
      grant.tokens--;
      return undefined;
    }
    if (!grant.asking) this.ask(destinationId, grant, limit, nowMs);
    return nowMs + grantWaitMs;
  }

  private ask(destinationId: string, grant: Grant, limit: RateLimit, nowMs: number): void {
    grant.asking = true;
    const request = this.o.buckets!.take({ destinationId, tokens: grantSize(limit), perSecond: limit.perSecond, burst: limit.burst, nowMs }).then(
      (taken) => {
        grant.tokens += taken.tokens;
        grant.usableFromMs = taken.usableFromMs;
        this.grantErrors.resolved();
      },
      (error: unknown) => this.grantErrors.report(error),
    );
    const tracked = request.finally(() => {
      grant.asking = false;
      this.asking.delete(tracked);
    });
    this.asking.add(tracked);
  }
}
