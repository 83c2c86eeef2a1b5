import type { Clock } from '../../libraries/clock/clock.js';
import type { Correlation } from './connector-records.js';

/**
 * The correlations a connector instance wrote itself, kept in memory so that a report for one of them (most are: the
 * centre reports on the bind the message was submitted on) is correlated without a read of the references bucket.
 *
 * A remembered correlation is used only while it can still be the stored one:
 * - no longer than the bucket keeps it (`ttlMs`, counted from before its write was sent): past that the stored
 *   record is gone, and the carrier may have given the id to another message;
 * - only while this instance is the key's latest writer. The carrier can give the same id to a new submission
 *   through another instance, which then writes the new correlation over this one. Every instance follows the
 *   bucket's change feed (revisions only, no values): a write of a remembered key at a later revision than this
 *   instance's own drops it. Reading the key on each report would tell the same, but the memory is there to spare
 *   that read; the feed costs no round trip on the report's path.
 * While the feed is not followed (not opened yet, or ended) nothing is remembered: a write sent before the feed
 * (re)opened may have been overwritten unseen. Only a report that comes between the other instance's write and the
 * feed showing it (milliseconds) still finds the old correlation, as one coming before that write finds it in the
 * bucket.
 */
export interface CorrelationMemory {
  /** The correlation this instance wrote for `key`, while it can still be the stored one; null otherwise. */
  recall(key: string): Correlation | null;
  /** The part's final report came: a copy sent again is read from the bucket. */
  forget(key: string): void;
  /**
   * This instance is about to write `key`: the write's time and what the feed shows of the key meanwhile are noted,
   * so a later write by another instance that the feed shows before this one's answer is not missed.
   */
  beginWrite(key: string): CorrelationWrite;
  /** The feed shows a write or a deletion of `key` at `revision` (this instance's own writes too). */
  observed(key: string, revision: number): void;
  /** The feed is followed from now on: writes sent from now on can be remembered. */
  resume(): void;
  /** The feed stopped: nothing remembered can be trusted any more. */
  suspend(): void;
  /** Correlations remembered now. */
  size(): number;
  /** Remembered correlations dropped because their key was written again since (mostly by another instance). */
  superseded(): number;
}

export interface CorrelationWrite {
  /** The write of `correlation` succeeded at `revision`: remembered, unless the key moved on already. */
  written(correlation: Correlation, revision: number): void;
  /** No more writes of the key under this one (succeeded or not). */
  end(): void;
}

export interface CorrelationMemoryOptions {
  /** Most correlations kept (the oldest go first). */
  readonly capacity: number;
  /** How long the bucket keeps a correlation after its write. */
  readonly ttlMs: number;
  readonly clock: Clock;
}

interface Remembered {
  readonly correlation: Correlation;
  readonly revision: number;
  /** Before the write was sent: the stored record expires no earlier than `sentAt + ttlMs`. */
  readonly sentAt: number;
}

interface Pending {
  readonly sentAt: number;
  /** The feed state it began in: a write begun before the feed (re)started is never remembered. */
  readonly epoch: number;
  /** The latest revision of the key the feed showed since it began (0: none). */
  newest: number;
}

export function createCorrelationMemory(options: CorrelationMemoryOptions): CorrelationMemory {
  const { capacity, ttlMs, clock } = options;
  const entries = new Map<string, Remembered>();
  const pending = new Map<string, Set<Pending>>();
  let following = false;
  let epoch = 0;
  let supersededCount = 0;

  const fresh = (entry: Remembered, now: number): boolean => now - entry.sentAt < ttlMs;

  /** Entries are kept in the order they were remembered, about that of their writes: the expired ones gather first. */
  function dropExpired(now: number): void {
    for (const [key, entry] of entries) {
      if (fresh(entry, now)) return;
      entries.delete(key);
    }
  }

  function remember(key: string, entry: Remembered): void {
    entries.delete(key);
    entries.set(key, entry);
    dropExpired(clock.now());
    while (entries.size > capacity) {
      const oldest = entries.keys().next();
      if (oldest.done === true) return;
      entries.delete(oldest.value);
    }
  }

  return {
    recall(key) {
      const entry = entries.get(key);
      if (entry === undefined) return null;
      if (fresh(entry, clock.now())) return entry.correlation;
      entries.delete(key);
      return null;
    },

    forget(key) {
      entries.delete(key);
    },

    beginWrite(key) {
      const write: Pending = { sentAt: clock.now(), epoch, newest: 0 };
      const ofKey = pending.get(key) ?? new Set<Pending>();
      ofKey.add(write);
      pending.set(key, ofKey);
      return {
        written(correlation, revision) {
          if (!following || write.epoch !== epoch) return;
          if (write.newest > revision) {
            // another instance wrote the key after this write, and the feed showed it first
            supersededCount++;
            return;
          }
          remember(key, { correlation, revision, sentAt: write.sentAt });
        },
        end() {
          ofKey.delete(write);
          if (ofKey.size === 0 && pending.get(key) === ofKey) pending.delete(key);
        },
      };
    },

    observed(key, revision) {
      const entry = entries.get(key);
      if (entry !== undefined && revision > entry.revision) {
        entries.delete(key);
        supersededCount++;
      }
      for (const write of pending.get(key) ?? []) write.newest = Math.max(write.newest, revision);
    },

    resume() {
      following = true;
      epoch++;
    },

    suspend() {
      following = false;
      epoch++;
      entries.clear();
    },

    size: () => entries.size,
    superseded: () => supersededCount,
  };
}
