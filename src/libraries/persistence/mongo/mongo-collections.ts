import type { Collection, Db } from 'mongodb';
import type { GatewayEnvironment } from '../../config/config.js';
import type { DeadLetter } from '../dead-letters-port.js';

// The collections of the MongoDB adapter: their documents, and the indexes each open makes sure of.

export interface OutboxDoc {
  readonly id: string;
  readonly topic: string;
  readonly payload: unknown;
  readonly shard: number;
  readonly done: boolean;
}

export interface JournalDoc {
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

export interface LeaseDoc {
  readonly _id: number;
  readonly owner: unknown;
  readonly epoch: unknown;
  readonly expiresAt: unknown;
}

export interface PricingDoc {
  readonly countryCallingCode: string;
  readonly networkPrefix: string;
  readonly price: number;
  readonly carrier: string;
}

export interface MerchantDoc {
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

export interface KeyDoc {
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

export interface DeadLetterDoc extends Omit<DeadLetter, 'id'> {
  readonly _id: string;
}

export interface Collections {
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

export function collectionsOf(db: Db): Collections {
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
export async function ensureIndexes(c: Collections): Promise<void> {
  await Promise.all([
    c.journal.createIndex({ key: 1, seq: 1 }, { unique: true, name: 'journal_key_seq_unique' }, {}),
    c.journal.createIndex({ outboxPending: 1, at: 1 }, { name: 'journal_outbox_pending_at' }, {}),
    c.merchants.createIndex({ createdAt: 1, _id: 1 }, { name: 'merchants_by_creation' }, {}),
    c.apiKeys.createIndex({ hash: 1 }, { unique: true, name: 'api_keys_hash_unique' }, {}),
    c.apiKeys.createIndex({ merchantId: 1, createdAt: 1, _id: 1 }, { name: 'api_keys_by_merchant' }, {}),
    c.deadLetters.createIndex({ merchantId: 1, droppedAt: 1, _id: 1 }, { name: 'dead_letters_by_merchant' }, {}),
  ]);
}
