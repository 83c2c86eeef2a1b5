import type { Clock } from '../libraries/clock/clock.js';

/**
 * Two guards against floods of unknown keys, each in this node's memory only: a short negative cache (an unknown
 * key presented again is answered without a database lookup) and a limit on the 401s one client address gets.
 */

/** Entries kept at most by each guard; the least recently used goes first. */
export const GUARD_MAX_ENTRIES = 10_000;

/** Map iteration order is insertion order: re-inserting on use keeps the least recently used first. */
function touch<K, V>(map: Map<K, V>, key: K, value: V, maxEntries: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > maxEntries) {
    const oldest = map.keys().next();
    if (oldest.done === true) break;
    map.delete(oldest.value);
  }
}

export interface NegativeCache {
  /** Whether `hash` was looked up and found unknown within the TTL. */
  has(hash: string): boolean;
  remember(hash: string): void;
  /** A key created or rotated to through this node resolves at once. */
  forget(hash: string): void;
}

export function createNegativeCache(options: { readonly clock: Clock; readonly ttlMs: number; readonly maxEntries?: number }): NegativeCache {
  const until = new Map<string, number>();
  const max = options.maxEntries ?? GUARD_MAX_ENTRIES;
  return {
    has(hash) {
      const expires = until.get(hash);
      if (expires === undefined) return false;
      if (options.clock.now() < expires) return true;
      until.delete(hash);
      return false;
    },
    remember(hash) {
      if (options.ttlMs > 0) touch(until, hash, options.clock.now() + options.ttlMs, max);
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
export function createFailureLimiter(options: { readonly clock: Clock; readonly limit: number; readonly windowMs: number; readonly maxEntries?: number }): FailureLimiter {
  const windows = new Map<string, { start: number; failures: number }>();
  const max = options.maxEntries ?? GUARD_MAX_ENTRIES;

  function current(address: string, now: number) {
    const window = windows.get(address);
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
      touch(windows, address, { start: window.start, failures: window.failures + 1 }, max);
    },
  };
}
