import { type Directory, type KeyRecord, type MerchantRecord, type PricingRowRecord } from '../directory-port.js';
import type { Collections, KeyDoc, MerchantDoc, PricingDoc } from './mongo-collections.js';
import { isDuplicateKey } from './mongo-errors.js';
import { DuplicateRecordError } from '../../errors/internal-errors.js';

// The directory on MongoDB: merchants (each with its whole price list), API keys and message owners.

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
      const doc = await c.merchants.findOneAndUpdate(
        { _id: id },
        { $set: set },
        { returnDocument: 'after', projection: MERCHANT_PROJECTION },
      );
      return doc ? toMerchant(doc) : null;
    },

    async setPricing(merchantId, rows) {
      // what the SQL primary key and check constraint refuse, refused before anything is written
      const seen = new Set<string>();
      for (const r of rows) {
        const id = `${r.countryCallingCode}\u0000${r.networkPrefix}`;
        if (seen.has(id)) throw new Error(`duplicate pricing row ${r.countryCallingCode}/${r.networkPrefix}`);
        seen.add(id);
        if (!Number.isSafeInteger(r.price) || r.price <= 0)
          throw new Error(`pricing row ${r.countryCallingCode}/${r.networkPrefix}: price must be a positive integer`);
      }
      const pricing = rows
        .map((r): PricingDoc => ({
          countryCallingCode: r.countryCallingCode,
          networkPrefix: r.networkPrefix,
          price: r.price,
          carrier: r.carrier,
        }))
        .sort(comparePricing);
      const result = await c.merchants.updateOne({ _id: merchantId }, { $set: { pricing } });
      if (result.matchedCount === 0 && rows.length > 0) throw new Error(`merchant ${merchantId} does not exist`);
    },

    async pricing(merchantId) {
      const doc = await c.merchants.findOne({ _id: merchantId }, { projection: { _id: 0, pricing: 1 } });
      return (doc?.pricing ?? [])
        .map((r): PricingRowRecord => ({
          countryCallingCode: r.countryCallingCode,
          networkPrefix: r.networkPrefix,
          price: r.price,
          carrier: r.carrier,
        }))
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

    async messageOwner(messageId) {
      const doc = await c.messageOwners.findOne({ _id: messageId });
      return doc?.merchantId ?? null;
    },

    async messageOwners(messageIds) {
      if (messageIds.length === 0) return new Map();
      const docs = await c.messageOwners.find({ _id: { $in: [...messageIds] } }).toArray();
      return new Map(docs.map((doc) => [doc._id, doc.merchantId]));
    },
  };
}
