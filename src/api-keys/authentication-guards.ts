import { LRUCache } from 'lru-cache';
import type { Clock } from '../libraries/clock/clock.js';

/**
 * Two guards against floods of unknown keys, each in this node's memory only: a short negative cache (an unknown
 * key presented again is answered without a database lookup) and a limit on the 401s one client address gets.
 */

/** Entries kept at most by each guard; the least recently used goes first. */
export const GUARD_MAX_ENTRIES = 10_000;

/**
 * The guards' memory: writing an entry makes it the most recent; reading it does not (a flood of checks keeps
 * nothing alive). Expiry is read against the injected clock, so that a manual clock drives it.
 */
function guardMemory<V extends object>(maxEntries: number): LRUCache<string, V> {
  return new LRUCache<string, V>({ max: maxEntries });
}

export interface NegativeCache {
  /** Whether `hash` was looked up and found unknown within the TTL. */
  has(hash: string): boolean;
  remember(hash: string): void;
  /** A key created or rotated to through this node resolves at once. */
  forget(hash: string): void;
}

export function createNegativeCache(options: {
  readonly clock: Clock;
  readonly ttlMs: number;
  readonly maxEntries?: number;
}): NegativeCache {
  const until = guardMemory<{ readonly expires: number }>(options.maxEntries ?? GUARD_MAX_ENTRIES);
  return {
    has(hash) {
      const entry = until.peek(hash);
      if (entry === undefined) return false;
      if (options.clock.now() < entry.expires) return true;
      until.delete(hash);
      return false;
    },
    remember(hash) {
      if (options.ttlMs > 0) until.set(hash, { expires: options.clock.now() + options.ttlMs });
    },
    forget(hash) {
      until.delete(hash);
    },
  };
}

export type AddressVerdict = { readonly limited: false } | { readonly limited: true; readonly retryAfterSeconds: number };

export interface FailureLimiter {
  /** Whether the address has had its 401s for the current window. */
  check(address: string): AddressVerdict;
  /** One more 401 for the address. */
  recordFailure(address: string): void;
}

/**
 * A fixed window per address, starting at its first 401: at most `limit` 401s in it, then `limited` until the
 * window ends (Retry-After counts to that end).
 */
export function createFailureLimiter(options: {
  readonly clock: Clock;
  readonly limit: number;
  readonly windowMs: number;
  readonly maxEntries?: number;
}): FailureLimiter {
  const windows = guardMemory<{ readonly start: number; readonly failures: number }>(options.maxEntries ?? GUARD_MAX_ENTRIES);

  function current(address: string, now: number) {
    const window = windows.peek(address);
    if (window && now - window.start < options.windowMs) return window;
    if (window) windows.delete(address);
    return null;
  }

  return {
    check(address) {
      const now = options.clock.now();
      const window = current(address, now);
      if (!window || window.failures < options.limit) return { limited: false };
      return { limited: true, retryAfterSeconds: Math.max(1, Math.ceil((window.start + options.windowMs - now) / 1000)) };
    },
    recordFailure(address) {
      const now = options.clock.now();
      const window = current(address, now) ?? { start: now, failures: 0 };
      windows.set(address, { start: window.start, failures: window.failures + 1 });
    },
  };
}
