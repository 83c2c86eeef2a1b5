import { MongoBulkWriteError, MongoClient, MongoServerError, type Collection, type Db } from 'mongodb';
import type { GatewayEnvironment } from '../../config/config.js';
import { DuplicateRecordError, type Directory, type KeyRecord, type MerchantRecord, type PricingRowRecord } from '../directory-port.js';
import {
  JournalConflictError,
  outboxEntriesOf,
  type Fence,
  type Journal,
  type JournalAppend,
  type JournalRecord,
  type Outbox,
  type PendingOutboxEntry,
  type Snapshot,
} from '../journal-port.js';
import { createGroupCommit, DEFAULT_GROUP_COMMIT_OPTIONS, type GroupCommitOptions, type PendingAppend } from '../group-commit.js';
import { checkEnvironmentClaim } from '../environment-claim.js';
import type { Persistence } from '../persistence.js';
import type { DeadLetter, DeadLetters } from '../dead-letters-port.js';
import type { Lease, LeaseStore } from '../lease-port.js';

/**
 * The MongoDB adapter of the persistence port (ARCHITECTURE.md §4). It passes the same contract suite as the SQL
 * adapter (test/integration/persistence/persistence-contract.ts, run when TEST_MONGO_URL is set).
 *
 * A standalone `mongod` has no multi-document transactions, so everything that must be atomic lives in one
 * document: an append (its events and the outbox entries they cause) is one `journal` document, and a merchant's
 * price list is an array inside the merchant document.
 */

export type MongoJournalOptions = GroupCommitOptions;

export const DEFAULT_MONGO_JOURNAL_OPTIONS: MongoJournalOptions = DEFAULT_GROUP_COMMIT_OPTIONS;

export interface MongoPersistenceOptions {
  readonly url: string;
  /** Defaults to the database named in the connection string (the driver's default when it names none). */
  readonly dbName?: string;
  readonly journal?: MongoJournalOptions;
}

// ---------------------------------------------------------------------------------------------------------------
// Documents

interface OutboxDoc {
  readonly id: string;
  readonly topic: string;
  readonly payload: unknown;
  readonly shard: number;
  readonly done: boolean;
}

interface JournalDoc {
  /**
   * `<key>#<seq>`: the always-present `_id` index is a second, undroppable fence on (key, seq). seq is a number,
   * so what follows the last `#` is it: distinct pairs give distinct ids even when keys contain `#`.
   */
  readonly _id: string;
  readonly key: string;
  readonly seq: number;
  readonly events: unknown[];
  readonly at: number;
  /**
   * The append's outbox entries, in the same document so that they are written with it or not at all. Unlike the
   * SQL outbox table (primary key on id, a repeated id dropped), a repeated id is kept: consumers deduplicate on it.
   */
  readonly outbox: OutboxDoc[];
  /** True while an outbox entry of this document is not done; indexed with `at` for the relay's poll. */
  readonly outboxPending: boolean;
}

interface SnapshotDoc {
  readonly _id: string;
  readonly seq: number;
  readonly state: unknown;
  readonly at: number;
}

interface LeaseDoc {
  readonly _id: number;
  readonly owner: unknown;
  readonly epoch: unknown;
  readonly expiresAt: unknown;
}

interface PricingDoc {
  readonly countryCallingCode: string;
  readonly networkPrefix: string;
  readonly price: number;
  readonly carrier: string;
}

interface MerchantDoc {
  readonly _id: string;
  readonly name: string;
  readonly timezone: string;
  readonly defaultCountry: string;
  readonly currency: string;
  readonly locale: string;
  readonly currencySymbol: string | null;
  readonly unitPrice: number | null;
  readonly wallets: { readonly prepaid: boolean; readonly postpaid: boolean };
  readonly createdAt: number;
  /** The whole price list, so that replacing it is one single-document (atomic) update. */
  readonly pricing: PricingDoc[];
}

interface KeyDoc {
  readonly _id: string;
  readonly merchantId: string;
  readonly environment: GatewayEnvironment;
  readonly hash: string;
  readonly display: string;
  readonly createdAt: number;
  readonly deletedAt: number | null;
}

interface MessageOwnerDoc {
  readonly _id: string;
  readonly merchantId: string;
  readonly createdAt: number;
}

interface NodeDoc {
  readonly _id: string;
  readonly expiresAt: Date;
}

/** One document per setting, named by its _id (the environment the database serves). */
interface SettingDoc {
  readonly _id: string;
  readonly value: string;
}

interface DeadLetterDoc extends Omit<DeadLetter, 'id'> {
  readonly _id: string;
}

interface Collections {
  readonly journal: Collection<JournalDoc>;
  readonly snapshots: Collection<SnapshotDoc>;
  readonly shardLeases: Collection<LeaseDoc>;
  readonly merchants: Collection<MerchantDoc>;
  readonly apiKeys: Collection<KeyDoc>;
  readonly messageOwners: Collection<MessageOwnerDoc>;
  readonly deadLetters: Collection<DeadLetterDoc>;
  readonly clusterNodes: Collection<NodeDoc>;
  readonly settings: Collection<SettingDoc>;
}

function collectionsOf(db: Db): Collections {
  return {
    journal: db.collection<JournalDoc>('journal'),
    snapshots: db.collection<SnapshotDoc>('snapshots'),
    shardLeases: db.collection<LeaseDoc>('shard_leases'),
    merchants: db.collection<MerchantDoc>('merchants'),
    apiKeys: db.collection<KeyDoc>('api_keys'),
    messageOwners: db.collection<MessageOwnerDoc>('message_owners'),
    deadLetters: db.collection<DeadLetterDoc>('webhook_dead_letters'),
    clusterNodes: db.collection<NodeDoc>('cluster_nodes'),
    settings: db.collection<SettingDoc>('gateway_settings'),
  };
}

/** `createIndex` is a no-op when an index with the same keys and options exists, so this runs at every open. */
async function ensureIndexes(c: Collections): Promise<void> {
  await Promise.all([
    c.journal.createIndex({ key: 1, seq: 1 }, { unique: true, name: 'journal_key_seq_unique' }, {}),
    c.journal.createIndex({ outboxPending: 1, at: 1 }, { name: 'journal_outbox_pending_at' }, {}),
    c.merchants.createIndex({ createdAt: 1, _id: 1 }, { name: 'merchants_by_creation' }, {}),
    c.apiKeys.createIndex({ hash: 1 }, { unique: true, name: 'api_keys_hash_unique' }, {}),
    c.apiKeys.createIndex({ merchantId: 1, createdAt: 1, _id: 1 }, { name: 'api_keys_by_merchant' }, {}),
    c.deadLetters.createIndex({ merchantId: 1, droppedAt: 1, _id: 1 }, { name: 'dead_letters_by_merchant' }, {}),
  ]);
}

// ---------------------------------------------------------------------------------------------------------------
// Helpers

const DUPLICATE_KEY = 11000;

function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}

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

// ---------------------------------------------------------------------------------------------------------------
// Journal and outbox

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
    const now = Date.now();
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
    await c.journal.updateMany({ ...ofKey, outboxPending: true, 'outbox.id': { $in: list }, 'outbox.done': { $ne: false } }, { $set: { outboxPending: false } });
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

  return {
    // an append waits for the earlier one of its key still being written: the later one landing first would make
    // the earlier look stale (a later record of its key exists) and refuse it
    append: createGroupCommit({ ...options, keyOf: (append) => append.key }, writeBatch),

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

    async pending({ limit, shards, topics, olderThan }) {
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
      return rows.map(
        (r): PendingOutboxEntry => ({
          id: r.outbox.id,
          key: r.key,
          seq: r.seq,
          topic: r.outbox.topic,
          payload: r.outbox.payload,
          shard: r.outbox.shard,
          createdAt: r.at,
        }),
      );
    },

    markDone: (ids) => markEntriesDone(ids),

    async backlog() {
      const rows = await c.journal
        .aggregate<{ n: number }>([{ $match: { outboxPending: true } }, { $unwind: '$outbox' }, { $match: { 'outbox.done': false } }, { $count: 'n' }])
        .toArray();
      return rows[0]?.n ?? 0;
    },

    onAppended(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Directory

const MERCHANT_PROJECTION = { pricing: 0 } as const;

const toMerchant = (d: MerchantDoc | Omit<MerchantDoc, 'pricing'>): MerchantRecord => ({
  id: d._id,
  name: d.name,
  timezone: d.timezone,
  defaultCountry: d.defaultCountry,
  currency: d.currency,
  locale: d.locale,
  currencySymbol: d.currencySymbol ?? null,
  unitPrice: d.unitPrice ?? null,
  wallets: { prepaid: d.wallets.prepaid, postpaid: d.wallets.postpaid },
  createdAt: d.createdAt,
});

const toKey = (d: KeyDoc): KeyRecord => ({
  keyId: d._id,
  merchantId: d.merchantId,
  environment: d.environment,
  hash: d.hash,
  display: d.display,
  createdAt: d.createdAt,
  deletedAt: d.deletedAt ?? null,
});

const byCode = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const comparePricing = (a: PricingRowRecord, b: PricingRowRecord): number =>
  byCode(a.countryCallingCode, b.countryCallingCode) || byCode(a.networkPrefix, b.networkPrefix);

export function createMongoDirectory(c: Collections): Directory {
  async function merchant(id: string): Promise<MerchantRecord | null> {
    const doc = await c.merchants.findOne({ _id: id }, { projection: MERCHANT_PROJECTION });
    return doc ? toMerchant(doc) : null;
  }

  async function requireMerchant(id: string): Promise<void> {
    // what the SQL foreign keys enforce; merchants are never deleted, so checking first is enough
    if ((await c.merchants.countDocuments({ _id: id }, { limit: 1 })) === 0) throw new Error(`merchant ${id} does not exist`);
  }

  return {
    async createMerchant(m) {
      try {
        await c.merchants.insertOne({
          _id: m.id,
          name: m.name,
          timezone: m.timezone,
          defaultCountry: m.defaultCountry,
          currency: m.currency,
          locale: m.locale,
          currencySymbol: m.currencySymbol,
          unitPrice: m.unitPrice,
          wallets: { prepaid: m.wallets.prepaid, postpaid: m.wallets.postpaid },
          createdAt: m.createdAt,
          pricing: [],
        });
      } catch (error) {
        if (isDuplicateKey(error)) throw new DuplicateRecordError(`merchant ${m.id}`);
        throw error;
      }
    },

    merchant,

    async merchants() {
      const docs = await c.merchants.find({}, { projection: MERCHANT_PROJECTION }).sort({ createdAt: 1, _id: 1 }).toArray();
      return docs.map(toMerchant);
    },

    async updateMerchant(id, changes) {
      const set: Record<string, unknown> = {};
      for (const field of ['name', 'timezone', 'defaultCountry', 'currency', 'locale', 'currencySymbol', 'unitPrice'] as const) {
        if (changes[field] !== undefined) set[field] = changes[field];
      }
      if (changes.wallets?.prepaid !== undefined) set['wallets.prepaid'] = changes.wallets.prepaid;
      if (changes.wallets?.postpaid !== undefined) set['wallets.postpaid'] = changes.wallets.postpaid;
      if (Object.keys(set).length === 0) return merchant(id);
      const doc = await c.merchants.findOneAndUpdate({ _id: id }, { $set: set }, { returnDocument: 'after', projection: MERCHANT_PROJECTION });
      return doc ? toMerchant(doc) : null;
    },

    async setPricing(merchantId, rows) {
      // what the SQL primary key and check constraint refuse, refused before anything is written
      const seen = new Set<string>();
      for (const r of rows) {
        const id = `${r.countryCallingCode}\u0000${r.networkPrefix}`;
        if (seen.has(id)) throw new Error(`duplicate pricing row ${r.countryCallingCode}/${r.networkPrefix}`);
        seen.add(id);
        if (!Number.isSafeInteger(r.price) || r.price <= 0) throw new Error(`pricing row ${r.countryCallingCode}/${r.networkPrefix}: price must be a positive integer`);
      }
      const pricing = rows
        .map((r): PricingDoc => ({ countryCallingCode: r.countryCallingCode, networkPrefix: r.networkPrefix, price: r.price, carrier: r.carrier }))
        .sort(comparePricing);
      const result = await c.merchants.updateOne({ _id: merchantId }, { $set: { pricing } });
      if (result.matchedCount === 0 && rows.length > 0) throw new Error(`merchant ${merchantId} does not exist`);
    },

    async pricing(merchantId) {
      const doc = await c.merchants.findOne({ _id: merchantId }, { projection: { _id: 0, pricing: 1 } });
      return (doc?.pricing ?? [])
        .map((r): PricingRowRecord => ({ countryCallingCode: r.countryCallingCode, networkPrefix: r.networkPrefix, price: r.price, carrier: r.carrier }))
        .sort(comparePricing);
    },

    async registerKey(k) {
      await requireMerchant(k.merchantId);
      try {
        await c.apiKeys.insertOne({
          _id: k.keyId,
          merchantId: k.merchantId,
          environment: k.environment,
          hash: k.hash,
          display: k.display,
          createdAt: k.createdAt,
          deletedAt: k.deletedAt,
        });
      } catch (error) {
        // the `_id` (key id) or the unique hash index
        if (isDuplicateKey(error)) throw new DuplicateRecordError(`api key ${k.keyId}`);
        throw error;
      }
    },

    async keyByHash(hash) {
      const doc = await c.apiKeys.findOne({ hash });
      return doc ? toKey(doc) : null;
    },

    async key(keyId) {
      const doc = await c.apiKeys.findOne({ _id: keyId });
      return doc ? toKey(doc) : null;
    },

    async keys(merchantId) {
      const docs = await c.apiKeys.find({ merchantId }).sort({ createdAt: 1, _id: 1 }).toArray();
      return docs.map(toKey);
    },

    async replaceKeyHash(keyId, hash, display) {
      // one single-document update: the old hash stops resolving in the same write
      await c.apiKeys.updateOne({ _id: keyId }, { $set: { hash, display } });
    },

    async markKeyDeleted(keyId, at) {
      // `deletedAt: null` matches null or missing: the first deletion time stays
      await c.apiKeys.updateOne({ _id: keyId, deletedAt: null }, { $set: { deletedAt: at } });
    },

    async recordMessageOwner(messageId, merchantId, at) {
      try {
        await c.messageOwners.updateOne({ _id: messageId }, { $setOnInsert: { merchantId, createdAt: at } }, { upsert: true });
      } catch (error) {
        // two concurrent first recordings: the other one inserted, and the first owner stays either way
        if (!isDuplicateKey(error)) throw error;
      }
    },

    async messageOwner(messageId) {
      const doc = await c.messageOwners.findOne({ _id: messageId });
      return doc?.merchantId ?? null;
    },
  };
}

export function createMongoDeadLetters(c: Collections): DeadLetters {
  const toLetter = ({ _id, ...rest }: DeadLetterDoc): DeadLetter => ({ id: _id, ...rest });
  return {
    async record(letter) {
      const { id, ...rest } = letter;
      // JSON round trip: the stored event reads back exactly as from PostgreSQL jsonb
      const fields: Omit<DeadLetterDoc, '_id'> = { ...rest, event: JSON.parse(JSON.stringify(rest.event)) as unknown };
      await c.deadLetters.updateOne({ _id: id }, { $setOnInsert: fields }, { upsert: true }).catch((error: unknown) => {
        if (!isDuplicateKey(error)) throw error;
      });
    },
    async list({ merchantId, limit }) {
      const docs = await c.deadLetters
        .find(merchantId === undefined ? {} : { merchantId })
        .sort({ droppedAt: 1, _id: 1 })
        .limit(limit)
        .toArray();
      return docs.map(toLetter);
    },
    async take(id) {
      const doc = await c.deadLetters.findOneAndDelete({ _id: id });
      return doc ? toLetter(doc) : null;
    },
  };
}

/**
 * Leases on MongoDB: one document per shard, changed by single-document atomic updates whose time is the server's
 * (`$$NOW` in pipeline updates), so two nodes cannot both take a shard and nodes' clocks do not matter.
 */
export function createMongoLeases(c: Collections): LeaseStore {
  const expiry = (ttlMs: number) => ({ $add: ['$$NOW', ttlMs] });
  const toLease = (doc: LeaseDoc): Lease => ({
    shard: doc._id,
    owner: String(doc.owner),
    epoch: Number(doc.epoch),
    expiresAt: doc.expiresAt instanceof Date ? doc.expiresAt.getTime() : 0,
  });
  return {
    async heartbeat(nodeId, ttlMs) {
      await c.clusterNodes.updateOne({ _id: nodeId }, [{ $set: { expiresAt: expiry(ttlMs) } }], { upsert: true });
    },
    async liveNodes() {
      const docs = await c.clusterNodes.find({ $expr: { $gt: ['$expiresAt', '$$NOW'] } }).sort({ _id: 1 }).toArray();
      return docs.map((d) => d._id);
    },
    async renew(nodeId, held, ttlMs) {
      const kept: number[] = [];
      for (const { shard, epoch } of held) {
        const result = await c.shardLeases.updateOne(
          { _id: shard, owner: nodeId, epoch, $expr: { $gt: ['$expiresAt', '$$NOW'] } },
          [{ $set: { expiresAt: expiry(ttlMs) } }],
        );
        if (result.modifiedCount === 1) kept.push(shard);
      }
      return kept;
    },
    async acquire(nodeId, candidates, max, ttlMs) {
      const taken: Lease[] = [];
      for (const shard of candidates) {
        if (taken.length >= max) break;
        try {
          const doc = await c.shardLeases.findOneAndUpdate(
            { _id: shard, $expr: { $lte: ['$expiresAt', '$$NOW'] } },
            [{ $set: { owner: nodeId, epoch: { $add: [{ $ifNull: ['$epoch', 0] }, 1] }, expiresAt: expiry(ttlMs) } }],
            { upsert: true, returnDocument: 'after' },
          );
          if (doc) taken.push(toLease(doc));
        } catch (error) {
          // a live lease exists: the upsert's insert collides with it
          if (!isDuplicateKey(error)) throw error;
        }
      }
      return taken;
    },
    async release(nodeId, shards) {
      if (shards.length === 0) return;
      await c.shardLeases.updateMany({ _id: { $in: [...shards] }, owner: nodeId }, [{ $set: { expiresAt: '$$NOW' } }]);
    },
    async leave(nodeId) {
      await c.clusterNodes.deleteOne({ _id: nodeId });
    },
    async list() {
      const docs = await c.shardLeases.find({}).sort({ _id: 1 }).toArray();
      return docs.map(toLease);
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Composition

export async function openMongoPersistence(options: MongoPersistenceOptions): Promise<Persistence> {
  const client = new MongoClient(options.url);
  try {
    await client.connect();
    const db = client.db(options.dbName);
    const collections = collectionsOf(db);
    await ensureIndexes(collections);
    const journal = createMongoJournal(collections, options.journal ?? DEFAULT_MONGO_JOURNAL_OPTIONS);
    return {
      kind: 'mongodb',
      journal,
      outbox: journal,
      directory: createMongoDirectory(collections),
      deadLetters: createMongoDeadLetters(collections),
      leases: createMongoLeases(collections),
      claimEnvironment: async (environment) => {
        try {
          await collections.settings.updateOne({ _id: 'environment' }, { $setOnInsert: { value: environment } }, { upsert: true });
        } catch (error) {
          // two first opens at once: one upsert inserts, the other meets its _id; what counts is what is recorded
          if (!isDuplicateKey(error)) throw error;
        }
        checkEnvironmentClaim(environment, (await collections.settings.findOne({ _id: 'environment' }))?.value ?? null);
      },
      ping: async () => {
        await db.command({ ping: 1 });
      },
      close: () => client.close(),
    };
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
}
