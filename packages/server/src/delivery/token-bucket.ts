import type { RateLimit } from '../config/model.js';

/**
 * A token bucket in memory: refilled at `perSecond` up to `burst`, full when made. One token
 * lets one attempt go. Used where one process owns the store (SQLite); a cluster shares its
 * buckets through the store (`store/rate-limit-buckets.ts`).
 */
export class TokenBucket {
  private tokens: number;
  private refilledAtMs: number;

  constructor(
    readonly limit: RateLimit,
    nowMs: number,
  ) {
    this.tokens = limit.burst;
    this.refilledAtMs = nowMs;
  }

  /** Takes one token if the bucket holds one at `nowMs`. */
  tryTake(nowMs: number): boolean {
    this.refill(nowMs);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** When the bucket will hold `count` tokens (at most its burst): `nowMs` if it does already. */
  readyAt(count: number, nowMs: number): number {
    this.refill(nowMs);
    const missing = Math.min(count, this.limit.burst) - this.tokens;
    return missing <= 0 ? nowMs : nowMs + Math.max(1, Math.ceil((missing / this.limit.perSecond) * 1000));
  }

  private refill(nowMs: number): void {
    // A clock that went back refills nothing, and the later time is kept.
    if (nowMs <= this.refilledAtMs) return;
    this.tokens = Math.min(this.limit.burst, this.tokens + ((nowMs - this.refilledAtMs) * this.limit.perSecond) / 1000);
    this.refilledAtMs = nowMs;
  }
}
