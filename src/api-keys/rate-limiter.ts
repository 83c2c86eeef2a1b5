export const RATE_BUCKETS = ['send', 'status', 'balance', 'calculate', 'management'] as const;
export type RateBucket = (typeof RATE_BUCKETS)[number];

export interface RateLimitPolicy {
  readonly windowMs: number;
  readonly limits: Readonly<Record<RateBucket, number>>;
  /** Rejections within one window that suspend the key (1302). */
  readonly suspendAfterRejections: number;
  readonly suspensionMs: number;
}

/**
 * A sliding log per bucket: the instants of admitted requests within the last window. Exact ("the window resets
 * continuously"): never more than `limit` admissions in any window of `windowMs`. Rejected requests are not
 * logged as admissions, so a client that waits `Retry-After` is admitted.
 */
export interface RateState {
  readonly admitted: Readonly<Partial<Record<RateBucket, readonly number[]>>>;
  /** Instants of recent rejections, all buckets together, for the suspension rule. */
  readonly rejections: readonly number[];
  readonly suspendedUntil: number | null;
}

export const EMPTY_RATE_STATE: RateState = Object.freeze({ admitted: {}, rejections: [], suspendedUntil: null });

export type RateDecision =
  | { readonly outcome: 'admitted'; readonly state: RateState }
  | { readonly outcome: 'limited'; readonly state: RateState; readonly retryAfterSeconds: number; readonly suspendedNow: boolean }
  | { readonly outcome: 'suspended'; readonly state: RateState; readonly retryAfterSeconds: number };

function secondsUntil(instant: number, now: number): number {
  return Math.max(1, Math.ceil((instant - now) / 1000));
}

export function decide(state: RateState, bucket: RateBucket, now: number, policy: RateLimitPolicy): RateDecision {
  if (state.suspendedUntil !== null && now < state.suspendedUntil) {
    return { outcome: 'suspended', state, retryAfterSeconds: secondsUntil(state.suspendedUntil, now) };
  }
  const windowStart = now - policy.windowMs;
  const recent = (state.admitted[bucket] ?? []).filter((t) => t > windowStart);
  const limit = policy.limits[bucket];
  // a suspension still set here has ended (one still running returned above): clear it and its rejection count
  const base: RateState = state.suspendedUntil !== null ? { ...state, suspendedUntil: null, rejections: [] } : state;

  if (recent.length < limit) {
    return { outcome: 'admitted', state: { ...base, admitted: { ...base.admitted, [bucket]: [...recent, now] } } };
  }
  // the oldest admission in the window leaves it first; then one slot is free
  const oldest = recent[recent.length - limit] ?? now;
  const retryAfterSeconds = secondsUntil(oldest + policy.windowMs, now);
  const rejections = [...base.rejections.filter((t) => t > windowStart), now];
  const suspendedNow = rejections.length >= policy.suspendAfterRejections;
  const next: RateState = {
    admitted: { ...base.admitted, [bucket]: recent },
    rejections: suspendedNow ? [] : rejections,
    suspendedUntil: suspendedNow ? now + policy.suspensionMs : base.suspendedUntil,
  };
  // the rejection that suspends the key already owes the whole suspension, not just the bucket's wait
  return { outcome: 'limited', state: next, retryAfterSeconds: suspendedNow ? secondsUntil(now + policy.suspensionMs, now) : retryAfterSeconds, suspendedNow };
}
