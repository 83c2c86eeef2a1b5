import type { Config } from '../libraries/config/config.js';

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
 * The instants of one bucket's admitted requests, oldest first: the part [start, end) of an array that only ever
 * grows at its end. A decision appends in place when its log ends where the array ends and copies otherwise, so
 * every earlier state stays valid (decisions are pure) and a decision costs O(1) amortized however high the limit.
 */
export interface AdmissionLog {
  /** Shared between states; only ever appended to past every state's `end`. */
  readonly instants: number[];
  readonly start: number;
  readonly end: number;
}

const EMPTY_LOG: AdmissionLog = Object.freeze({ instants: [], start: 0, end: 0 });
/** Dropped instants kept at the array's head before it is compacted. */
const COMPACT_AFTER = 1024;

function admissionCount(log: AdmissionLog): number {
  return log.end - log.start;
}

/** The bucket's logged admissions, oldest first (a copy). */
export function admissionsOf(state: RateState, bucket: RateBucket): number[] {
  const log = state.admitted[bucket] ?? EMPTY_LOG;
  return log.instants.slice(log.start, log.end);
}

/** The log without the instants at or before `windowStart`. */
function withinWindow(log: AdmissionLog, windowStart: number): AdmissionLog {
  let start = log.start;
  while (start < log.end && (log.instants[start] ?? Infinity) <= windowStart) start++;
  return start === log.start ? log : { instants: log.instants, start, end: log.end };
}

function admit(log: AdmissionLog, now: number): AdmissionLog {
  const shared = log.instants.length === log.end;
  const compact = log.start > COMPACT_AFTER && log.start * 2 > log.end;
  if (shared && !compact) {
    log.instants.push(now);
    return { instants: log.instants, start: log.start, end: log.end + 1 };
  }
  const instants = log.instants.slice(log.start, log.end);
  instants.push(now);
  return { instants, start: 0, end: instants.length };
}

/**
 * A sliding log per bucket: the instants of admitted requests within the last window. Exact ("the window resets
 * continuously"): never more than `limit` admissions in any window of `windowMs`. Rejected requests are not
 * logged as admissions, so a client that waits `Retry-After` is admitted.
 */
export interface RateState {
  readonly admitted: Readonly<Partial<Record<RateBucket, AdmissionLog>>>;
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
  const recent = withinWindow(state.admitted[bucket] ?? EMPTY_LOG, windowStart);
  const limit = policy.limits[bucket];
  // a suspension still set here has ended (one still running returned above): clear it and its rejection count
  const base: RateState = state.suspendedUntil !== null ? { ...state, suspendedUntil: null, rejections: [] } : state;

  if (admissionCount(recent) < limit) {
    return { outcome: 'admitted', state: { ...base, admitted: { ...base.admitted, [bucket]: admit(recent, now) } } };
  }
  // the oldest of the last `limit` admissions leaves the window first; then one slot is free
  const oldest = recent.instants[recent.end - limit] ?? now;
  const retryAfterSeconds = secondsUntil(oldest + policy.windowMs, now);
  const rejections = [...base.rejections.filter((t) => t > windowStart), now];
  const suspendedNow = rejections.length >= policy.suspendAfterRejections;
  const next: RateState = {
    admitted: { ...base.admitted, [bucket]: recent },
    rejections: suspendedNow ? [] : rejections,
    suspendedUntil: suspendedNow ? now + policy.suspensionMs : base.suspendedUntil,
  };
  // the rejection that suspends the key already owes the whole suspension, not just the bucket's wait
  return {
    outcome: 'limited',
    state: next,
    retryAfterSeconds: suspendedNow ? secondsUntil(now + policy.suspensionMs, now) : retryAfterSeconds,
    suspendedNow,
  };
}

/** The rate limits of every key, as configured (RATE_LIMIT_*, SUSPEND_AFTER_REJECTIONS, SUSPENSION_MS). */
export function ratePolicyOf(config: Config): RateLimitPolicy {
  const limits = Object.fromEntries(RATE_BUCKETS.map((bucket) => [bucket, config.rateLimits[bucket]])) as RateLimitPolicy['limits'];
  return {
    windowMs: config.rateLimits.windowMs,
    limits,
    suspendAfterRejections: config.rateLimits.suspendAfterRejections,
    suspensionMs: config.rateLimits.suspensionMs,
  };
}
