import {
  outboxEntriesOf,
  recordsOf,
  type Journal,
  type JournalAppend,
  type JournalRecord,
  type Outbox,
  type PendingOutboxEntry,
  type Snapshot,
} from '../../src/libraries/persistence/journal-port.js';
import { JournalConflictError } from '../../src/libraries/errors/internal-errors.js';

/** An in-memory journal for unit tests of the actor layer; the real adapters pass the same contract suite. */
export function createMemoryJournal(): Journal &
  Outbox & {
    records(key: string): JournalRecord[];
    failNextAppend(error: Error, times?: number): void;
    failNextRead(error: Error): void;
    fence(shard: number, epoch: number): void;
  } {
  const byKey = new Map<string, JournalRecord[]>();
  const snapshots = new Map<string, Snapshot>();
  const outbox = new Map<string, PendingOutboxEntry>();
  const currentEpoch = new Map<number, number>();
  let nextFailure: Error | null = null;
  let failuresLeft = 0;
  let nextReadFailure: Error | null = null;
  const listeners = new Set<(entries: readonly PendingOutboxEntry[]) => void>();

  return {
    async append(append: JournalAppend) {
      await Promise.resolve();
      if (nextFailure && failuresLeft > 0) {
        const error = nextFailure;
        if (--failuresLeft === 0) nextFailure = null;
        throw error;
      }
      if (append.fence && (currentEpoch.get(append.fence.shard) ?? append.fence.epoch) !== append.fence.epoch) {
        throw new JournalConflictError(append.key, append.seq, 'fenced');
      }
      const records = byKey.get(append.key) ?? [];
      if (records.some((r) => r.seq >= append.seq)) throw new JournalConflictError(append.key, append.seq, 'sequence_taken');
      const companions = append.companions ?? [];
      if (companions.some((c) => (byKey.get(c.key)?.length ?? 0) > 0))
        throw new JournalConflictError(append.key, append.seq, 'sequence_taken');
      for (const record of recordsOf(append)) {
        const ofKey = byKey.get(record.key) ?? [];
        ofKey.push({ key: record.key, seq: record.seq, events: record.events, at: record.at });
        ofKey.sort((a, b) => a.seq - b.seq);
        byKey.set(record.key, ofKey);
      }
      const entries = outboxEntriesOf(append);
      for (const entry of entries) outbox.set(entry.id, entry);
      for (const id of append.retire ?? []) if (outbox.get(id)?.key === append.key) outbox.delete(id);
      if (entries.length > 0) for (const listener of listeners) listener(entries);
    },
    writesCompanions: true,
    async read(key, afterSeq) {
      await Promise.resolve();
      if (nextReadFailure) {
        const error = nextReadFailure;
        nextReadFailure = null;
        throw error;
      }
      return (byKey.get(key) ?? []).filter((r) => r.seq > afterSeq);
    },
    async latestSnapshot(key) {
      await Promise.resolve();
      return snapshots.get(key) ?? null;
    },
    async saveSnapshot(snapshot) {
      await Promise.resolve();
      const current = snapshots.get(snapshot.key);
      if (!current || current.seq < snapshot.seq) snapshots.set(snapshot.key, snapshot);
    },
    async prunable({ prefix, lastBefore, limit }) {
      await Promise.resolve();
      return [...byKey.entries()]
        .filter(([key, records]) => key.startsWith(prefix) && records.length > 1 && (records.at(-1)?.at ?? 0) < lastBefore)
        .map(([key, records]) => ({ key, seq: records.at(-1)?.seq ?? 0 }))
        .slice(0, limit);
    },
    async pruneBefore(key, seq) {
      await Promise.resolve();
      if ((snapshots.get(key)?.seq ?? -1) < seq) return 0;
      const records = byKey.get(key) ?? [];
      const kept = records.filter((r) => r.seq >= seq);
      byKey.set(key, kept);
      return records.length - kept.length;
    },
    async pending({ limit, shards, topics, olderThan }) {
      await Promise.resolve();
      return [...outbox.values()]
        .filter(
          (e) =>
            (!shards || shards.includes(e.shard)) &&
            (!topics || topics.includes(e.topic)) &&
            (olderThan === undefined || e.createdAt < olderThan),
        )
        .sort((a, b) => a.createdAt - b.createdAt)
        .slice(0, limit);
    },
    async pendingTopics({ topics, shards }) {
      await Promise.resolve();
      const entries = [...outbox.values()].filter((e) => !shards || shards.includes(e.shard));
      return new Set(
        topics
          .filter(({ topic, olderThan }) => entries.some((e) => e.topic === topic && (olderThan === undefined || e.createdAt < olderThan)))
          .map(({ topic }) => topic),
      );
    },
    async markDone(ids) {
      await Promise.resolve();
      for (const id of ids) outbox.delete(id);
    },
    async backlog() {
      await Promise.resolve();
      return outbox.size;
    },
    onAppended(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    records: (key) => [...(byKey.get(key) ?? [])],
    failNextAppend: (error, times = 1) => {
      nextFailure = error;
      failuresLeft = times;
    },
    failNextRead: (error) => {
      nextReadFailure = error;
    },
    fence: (shard, epoch) => {
      currentEpoch.set(shard, epoch);
    },
  };
}
