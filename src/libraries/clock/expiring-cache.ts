import { LRUCache } from 'lru-cache';
import type { Clock } from './clock.js';

/**
 * Values kept for `ttlMs` by the injected clock, at most `max` of them (the least recently used goes first). The age
 * is read against the clock on every read, so a manual clock in tests drives expiry exactly: a value written at t
 * is fresh until t + ttlMs (exclusive).
 */
export interface ExpiringCache<K, V> {
  get(key: K): V | undefined;
  set(key: K, value: V): void;
  delete(key: K): void;
  clear(): void;
}

export function createExpiringCache<K extends string, V>(options: {
  readonly clock: Clock;
  readonly ttlMs: number;
  readonly max: number;
}): ExpiringCache<K, V> {
  const entries = new LRUCache<K, { readonly value: V; readonly at: number }>({ max: options.max });
  return {
    get(key) {
      const entry = entries.get(key);
      if (entry === undefined) return undefined;
      if (options.clock.now() - entry.at < options.ttlMs) return entry.value;
      entries.delete(key);
      return undefined;
    },
    set(key, value) {
      entries.set(key, { value, at: options.clock.now() });
    },
    delete(key) {
      entries.delete(key);
    },
    clear() {
      entries.clear();
    },
  };
}
