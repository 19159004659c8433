/** A node's request for tokens of a destination's shared bucket. */
export interface TokenRequest {
  destinationId: string;
  /** How many; at most `burst`. */
  tokens: number;
  /** The destination's limit, as this node's catalogue has it. */
  perSecond: number;
  burst: number;
  /** This node's clock. */
  nowMs: number;
}

/** Tokens granted to one node: each allows one attempt, from `usableFromMs` on. */
export interface TokenGrant {
  tokens: number;
  /** Now, when the bucket held them; else when its refill will have paid for them. */
  usableFromMs: number;
}

/**
 * Token buckets of rate-limited destinations shared by the nodes of a cluster (PostgreSQL), one
 * row per destination: a node takes a small grant ahead of its sends, so that the check before
 * each send asks only its own memory (docs/delivery.md, "Rate limit").
 */
export interface RateLimitBuckets {
  /**
   * Takes `tokens` from the destination's bucket, refilled at `perSecond` up to `burst` since
   * its last take (a fresh bucket is full). Always granted: a bucket without enough goes into
   * debt, and the grant becomes usable when the refill has paid that debt, so that grants are
   * handed out in order and never faster than the limit.
   */
  take(request: TokenRequest): Promise<TokenGrant>;
}

/** When a grant is usable: now if the bucket still holds tokens after it, else once its debt is refilled. */
export function usableFrom(tokensAfter: number, refilledAtMs: number, request: Pick<TokenRequest, 'perSecond' | 'nowMs'>): number {
  if (tokensAfter >= 0) return request.nowMs;
  return Math.max(request.nowMs, refilledAtMs + Math.ceil((-tokensAfter / request.perSecond) * 1000));
}
