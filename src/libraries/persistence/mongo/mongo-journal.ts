import { MongoBulkWriteError } from 'mongodb';
import { systemClock } from '../../clock/clock.js';
import {
  outboxEntriesOf,
  type Fence,
  type Journal,
  type JournalAppend,
  type JournalRecord,
  type Outbox,
  type PendingOutboxEntry,
  type PendingQuery,
  type Snapshot,
} from '../journal-port.js';
import { createGroupCommit, DEFAULT_GROUP_COMMIT_OPTIONS, type GroupCommitOptions, type PendingAppend } from '../group-commit.js';
import type { Collections, JournalDoc, LeaseDoc, OutboxDoc } from './mongo-collections.js';
import { DUPLICATE_KEY, isDuplicateKey } from './mongo-errors.js';
import { JournalConflictError } from '../../errors/internal-errors.js';

// The journal and its outbox on MongoDB: an append and the outbox entries it causes are one `journal` document.

export type MongoJournalOptions = GroupCommitOptions;

export const DEFAULT_MONGO_JOURNAL_OPTIONS: MongoJournalOptions = DEFAULT_GROUP_COMMIT_OPTIONS;

/**
 * Events, payloads and snapshot states go through JSON, as they do in the SQL adapter (jsonb): what reads back is
 * what JSON keeps (no `undefined` fields, dates as strings), whatever the store.
 */
function asJson(value: unknown): unknown {
  const text = JSON.stringify(value) as string | undefined;
  return text === undefined ? null : (JSON.parse(text) as unknown);
}

const journalId = (key: string, seq: number): string => `${key}#${seq}`;
const pairOf = (append: JournalAppend): string => `${append.key}\u0000${append.seq}`;

function leaseIsCurrent(lease: LeaseDoc | undefined, fence: Fence, now: number): boolean {
  return (
    lease !== undefined &&
    lease.owner === fence.owner &&
    lease.epoch === fence.epoch &&
    lease.expiresAt instanceof Date &&
    lease.expiresAt.getTime() > now
  );
}

function isList<T>(value: T | readonly T[]): value is readonly T[] {
  return Array.isArray(value);
}

/** `writeErrors` is typed one-or-more (the driver fills an array). */
function listOf<T>(value: T | readonly T[]): readonly T[] {
  return isList(value) ? value : [value];
}

interface BulkOutcome {
  /** Index in the array sent → whether it failed on a duplicate key (else on another write error). */
  readonly failed: ReadonlyMap<number, boolean>;
  /** The documents without a write error are known to be written. */
  readonly othersWritten: boolean;
}

/**
 * What an unordered `insertMany` that threw tells about each document. `MongoBulkWriteError.writeErrors` carries
 * one error per failed document with `index`, its position in the array sent; with `ordered: false` the server
 * tries every document, so the others were inserted — which `result.insertedCount` must confirm. Anything else
 * (a network error, a write concern error, counts that do not add up) leaves the documents' fate unknown.
 */
function outcomeOfBulkError(error: unknown, sent: number): BulkOutcome | null {
  if (!(error instanceof MongoBulkWriteError)) return null;
  const writeErrors = listOf(error.writeErrors);
  if (writeErrors.length === 0) return null;
  const failed = new Map<number, boolean>();
  for (const writeError of writeErrors) failed.set(writeError.index, writeError.code === DUPLICATE_KEY);
  const othersWritten = error.result.getWriteConcernError() === undefined && error.result.insertedCount + failed.size === sent;
  return { failed, othersWritten };
}

export function createMongoJournal(c: Collections, options: MongoJournalOptions = DEFAULT_MONGO_JOURNAL_OPTIONS): Journal & Outbox {
  const listeners = new Set<(entries: readonly PendingOutboxEntry[]) => void>();

  function notify(entries: readonly PendingOutboxEntry[]): void {
    for (const listener of listeners) {
      try {
        listener(entries);
      } catch {
        // a listener's failure is not the append's: it is written
      }
    }
  }

  /**
   * Best-effort fence. A standalone server cannot check the lease atomically with the insert (that would need a
   * multi-document transaction), so the lease is read just before the insert: an append under a lease that is
   * already gone, taken over (owner or epoch differ) or expired is refused as `fenced`. A lease lost between this
   * read and the insert is not seen here; the hard fence remains the unique (key, seq): a new owner that
   * replayed the key writes the next sequence number, and the old owner's append of it then fails.
   * `expiresAt` is compared with this process's clock (the SQL adapter uses the database's `now()`).
   */
  async function checkFences(contenders: readonly PendingAppend[]): Promise<PendingAppend[]> {
    const fenced = contenders.filter((p) => p.item.fence !== undefined);
    if (fenced.length === 0) return [...contenders];
    const shards = [...new Set(fenced.map((p) => p.item.fence?.shard ?? 0))];
    let leases: Map<number, LeaseDoc>;
    try {
      const found = await c.shardLeases.find({ _id: { $in: shards } }).toArray();
      leases = new Map(found.map((lease) => [lease._id, lease]));
    } catch (error) {
      for (const pending of fenced) pending.reject(error);
      return contenders.filter((p) => p.item.fence === undefined);
    }
    const now = systemClock.now();
    const allowed: PendingAppend[] = [];
    for (const pending of contenders) {
      const fence = pending.item.fence;
      if (fence === undefined || leaseIsCurrent(leases.get(fence.shard), fence, now)) allowed.push(pending);
      else pending.reject(new JournalConflictError(pending.item.key, pending.item.seq, 'fenced'));
    }
    return allowed;
  }

  /** Entries done, optionally only those a given key wrote. */
  async function markEntriesDone(ids: readonly string[], key?: string): Promise<void> {
    if (ids.length === 0) return;
    const list = [...ids];
    const ofKey = key === undefined ? {} : { key };
    await c.journal.updateMany(
      { ...ofKey, outboxPending: true, 'outbox.id': { $in: list } },
      { $set: { 'outbox.$[e].done': true } },
      { arrayFilters: [{ 'e.id': { $in: list } }] },
    );
    // `'outbox.done': { $ne: false }` matches a document none of whose entries is still not done. A crash
    // between the two updates leaves `outboxPending` true on a document with nothing pending: harmless, pending()
    // and backlog() look at the entries.
    await c.journal.updateMany(
      { ...ofKey, outboxPending: true, 'outbox.id': { $in: list }, 'outbox.done': { $ne: false } },
      { $set: { outboxPending: false } },
    );
  }

  /**
   * The owners the appends establish, recorded just before their records (no multi-document transaction on a
   * standalone server). A failure between the two leaves an owner whose thing was never created, which a lookup
   * answers like an unknown id (ids are never reused); the other order could leave a created thing nobody finds.
   * Concurrent first recordings of one id: the first owner stays either way.
   */
  async function recordOwners(appends: readonly JournalAppend[]): Promise<void> {
    const owners = appends.flatMap((a) => (a.owner ? [{ ...a.owner, at: a.at }] : []));
    if (owners.length === 0) return;
    try {
      await c.messageOwners.bulkWrite(
        owners.map((o) => ({
          updateOne: { filter: { _id: o.id }, update: { $setOnInsert: { merchantId: o.owner, createdAt: o.at } }, upsert: true },
        })),
        { ordered: false },
      );
    } catch (error) {
      const duplicatesOnly = error instanceof MongoBulkWriteError && listOf(error.writeErrors).every((e) => e.code === DUPLICATE_KEY);
      if (!duplicatesOnly) throw error;
    }
  }

  /**
   * What written appends retire, just after their insert (no multi-document transaction on a standalone server). The
   * appends are written whatever happens here: a failure leaves the entries pending, and their consumers take them
   * as the no-ops they have become.
   */
  async function retireEntries(appends: readonly JournalAppend[]): Promise<void> {
    await Promise.all(appends.map((a) => markEntriesDone(a.retire ?? [], a.key).catch(() => undefined)));
  }

  /**
   * Appends below a record their key already has: a key pruned past them (journal prune) keeps its last record, so a
   * stale writer conflicts there as it would have on the records pruned.
   */
  async function laterRecordsOf(appends: readonly PendingAppend[]): Promise<Set<string>> {
    if (appends.length === 0) return new Set();
    const later = await c.journal
      .find({ $or: appends.map((p) => ({ key: p.item.key, seq: { $gt: p.item.seq } })) }, { projection: { _id: 0, key: 1, seq: 1 } })
      .toArray();
    const lastOf = new Map<string, number>();
    for (const doc of later) lastOf.set(doc.key, Math.max(doc.seq, lastOf.get(doc.key) ?? 0));
    return new Set(appends.filter((p) => (lastOf.get(p.item.key) ?? 0) > p.item.seq).map((p) => pairOf(p.item)));
  }

  async function writeBatch(batch: readonly PendingAppend[]): Promise<void> {
    try {
      // two appends of one (key, seq) in a batch: the first competes, the others lost already
      const seen = new Set<string>();
      const contenders: PendingAppend[] = [];
      for (const pending of batch) {
        const pair = pairOf(pending.item);
        if (seen.has(pair)) pending.reject(new JournalConflictError(pending.item.key, pending.item.seq, 'sequence_taken'));
        else {
          seen.add(pair);
          contenders.push(pending);
        }
      }

      const allowed = await checkFences(contenders);
      const superseded = await laterRecordsOf(allowed);
      const sending: PendingAppend[] = [];
      const docs: JournalDoc[] = [];
      for (const pending of allowed) {
        const a = pending.item;
        if (superseded.has(pairOf(a))) {
          pending.reject(new JournalConflictError(a.key, a.seq, 'sequence_taken'));
          continue;
        }
        try {
          docs.push({
            _id: journalId(a.key, a.seq),
            key: a.key,
            seq: a.seq,
            events: asJson(a.events) as unknown[],
            at: a.at,
            outbox: a.outbox.map((e) => ({ id: e.id, topic: e.topic, payload: asJson(e.payload), shard: e.shard, done: false })),
            outboxPending: a.outbox.length > 0,
          });
          sending.push(pending);
        } catch (error) {
          // not serialisable (a BigInt, a cycle): only this append fails
          pending.reject(error);
        }
      }
      if (docs.length === 0) return;
      try {
        await recordOwners(sending.map((pending) => pending.item));
      } catch (error) {
        for (const pending of sending) pending.reject(error);
        return;
      }

      let failed: ReadonlyMap<number, boolean> = new Map();
      let othersWritten = true;
      let batchError: unknown = undefined;
      try {
        await c.journal.insertMany(docs, { ordered: false });
      } catch (error) {
        const outcome = outcomeOfBulkError(error, docs.length);
        if (outcome === null) {
          for (const pending of sending) pending.reject(error);
          return;
        }
        failed = outcome.failed;
        othersWritten = outcome.othersWritten;
        batchError = error;
      }

      const written: PendingOutboxEntry[] = [];
      // an append that retires entries is answered once they are retired (just after its insert)
      const retiring: PendingAppend[] = [];
      for (const [index, pending] of sending.entries()) {
        const duplicate = failed.get(index);
        if (duplicate === true) pending.reject(new JournalConflictError(pending.item.key, pending.item.seq, 'sequence_taken'));
        else if (duplicate === false || !othersWritten) pending.reject(batchError);
        else {
          if (pending.item.retire !== undefined && pending.item.retire.length > 0) retiring.push(pending);
          else pending.resolve();
          written.push(...outboxEntriesOf(pending.item));
        }
      }
      if (written.length > 0) notify(written);
      await retireEntries(retiring.map((pending) => pending.item));
      for (const pending of retiring) pending.resolve();
    } catch (error) {
      // unexpected: settle whatever is still waiting (settling a settled promise again does nothing)
      for (const pending of batch) pending.reject(error);
    }
  }

  // an append waits for the earlier one of its key still being written: the later one landing first would make
  // the earlier look stale (a later record of its key exists) and refuse it
  const groupCommit = createGroupCommit({ ...options, keyOf: (append: JournalAppend) => append.key }, writeBatch);

  async function pendingEntries({ limit, shards, topics, olderThan }: PendingQuery): Promise<PendingOutboxEntry[]> {
    if (limit < 1) return [];
    const rows = await c.journal
      .aggregate<{ key: string; seq: number; at: number; outbox: OutboxDoc }>([
        { $match: { outboxPending: true, ...(olderThan !== undefined ? { at: { $lt: olderThan } } : {}) } },
        { $unwind: '$outbox' },
        {
          $match: {
            'outbox.done': false,
            ...(shards ? { 'outbox.shard': { $in: [...shards] } } : {}),
            ...(topics ? { 'outbox.topic': { $in: [...topics] } } : {}),
          },
        },
        { $sort: { at: 1, 'outbox.id': 1 } },
        { $limit: Math.floor(limit) },
        { $project: { _id: 0, key: 1, seq: 1, at: 1, outbox: 1 } },
      ])
      .toArray();
    return rows.map((r): PendingOutboxEntry => ({
      id: r.outbox.id,
      key: r.key,
      seq: r.seq,
      topic: r.outbox.topic,
      payload: r.outbox.payload,
      shard: r.outbox.shard,
      createdAt: r.at,
    }));
  }

  return {
    append: async (append) => {
      // several documents are not written atomically on a standalone server: a send's creation stays a follow-up
      if (append.companions && append.companions.length > 0)
        throw new Error(`${append.key}: this journal cannot write companion records in the same write`);
      await groupCommit(append);
    },
    writesCompanions: false,

    async read(key, afterSeq) {
      const docs = await c.journal
        .find({ key, seq: { $gt: afterSeq } }, { projection: { _id: 0, seq: 1, events: 1, at: 1 } })
        .sort({ seq: 1 })
        .toArray();
      return docs.map((d): JournalRecord => ({ key, seq: d.seq, events: d.events, at: d.at }));
    },

    async latestSnapshot(key) {
      const doc = await c.snapshots.findOne({ _id: key });
      return doc ? { key, seq: doc.seq, state: doc.state, at: doc.at } : null;
    },

    async saveSnapshot(snapshot: Snapshot) {
      try {
        // Replaces only an older snapshot. When one of this seq or newer exists, the filter matches nothing, the
        // upsert tries to insert `_id: key` and gets a duplicate key error: the newer snapshot stays.
        await c.snapshots.updateOne(
          { _id: snapshot.key, seq: { $lt: snapshot.seq } },
          { $set: { seq: snapshot.seq, state: asJson(snapshot.state), at: snapshot.at } },
          { upsert: true },
        );
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
    },

    async prunable({ prefix, lastBefore, limit }) {
      const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const rows = await c.journal
        .aggregate<{ _id: string; seq: number }>([
          { $match: { key: { $regex: `^${escaped}` } } },
          { $group: { _id: '$key', seq: { $max: '$seq' }, first: { $min: '$seq' }, last: { $max: '$at' } } },
          { $match: { last: { $lt: lastBefore }, $expr: { $lt: ['$first', '$seq'] } } },
          { $sort: { last: 1, _id: 1 } },
          { $limit: limit },
          { $project: { _id: 1, seq: 1 } },
        ])
        .toArray();
      return rows.map((r) => ({ key: r._id, seq: r.seq }));
    },

    async pruneBefore(key, seq) {
      // only under a snapshot that covers the records removed
      if (!(await c.snapshots.findOne({ _id: key, seq: { $gte: seq } }, { projection: { _id: 1 } }))) return 0;
      const result = await c.journal.deleteMany({ key, seq: { $lt: seq } });
      return result.deletedCount;
    },

    pending: pendingEntries,

    async pendingTopics({ topics, shards }) {
      // a probe per topic, at once: the adapter's pending() with a limit of one
      const found = await Promise.all(
        topics.map(async ({ topic, olderThan }) => {
          const entries = await pendingEntries({
            limit: 1,
            topics: [topic],
            ...(shards ? { shards } : {}),
            ...(olderThan !== undefined ? { olderThan } : {}),
          });
          return entries.length > 0 ? [topic] : [];
        }),
      );
      return new Set(found.flat());
    },

    markDone: (ids) => markEntriesDone(ids),

    async backlog() {
      const rows = await c.journal
        .aggregate<{ n: number }>([
          { $match: { outboxPending: true } },
          { $unwind: '$outbox' },
          { $match: { 'outbox.done': false } },
          { $count: 'n' },
        ])
        .toArray();
      return rows[0]?.n ?? 0;
    },

    onAppended(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
