import type { GatewayEnvironment } from '../../config/config.js';
import { type Directory, type KeyRecord, type MerchantRecord, type PricingRowRecord } from '../directory-port.js';
import type { SqlExecutor } from './sql-executor.js';
import { DuplicateRecordError } from '../../errors/internal-errors.js';

interface MerchantRow {
  id: string;
  name: string;
  timezone: string;
  default_country: string;
  currency: string;
  locale: string;
  currency_symbol: string | null;
  unit_price: number | null;
  prepaid_wallet: boolean;
  postpaid_wallet: boolean;
  created_at: number;
}

interface KeyRow {
  key_id: string;
  merchant_id: string;
  environment: GatewayEnvironment;
  key_hash: string;
  display: string;
  created_at: number;
  deleted_at: number | null;
}

const MERCHANT_COLUMNS = `id, name, timezone, default_country, currency, locale, currency_symbol, unit_price::float8 AS unit_price,
  prepaid_wallet, postpaid_wallet, created_at::float8 AS created_at`;
const KEY_COLUMNS =
  'key_id, merchant_id, environment, key_hash, display, created_at::float8 AS created_at, deleted_at::float8 AS deleted_at';

const toMerchant = (r: MerchantRow): MerchantRecord => ({
  id: r.id,
  name: r.name,
  timezone: r.timezone,
  defaultCountry: r.default_country,
  currency: r.currency,
  locale: r.locale,
  currencySymbol: r.currency_symbol,
  unitPrice: r.unit_price === null ? null : r.unit_price,
  wallets: { prepaid: r.prepaid_wallet, postpaid: r.postpaid_wallet },
  createdAt: r.created_at,
});

const toKey = (r: KeyRow): KeyRecord => ({
  keyId: r.key_id,
  merchantId: r.merchant_id,
  environment: r.environment,
  hash: r.key_hash,
  display: r.display,
  createdAt: r.created_at,
  deletedAt: r.deleted_at === null ? null : r.deleted_at,
});

function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23505';
}

export function createSqlDirectory(db: SqlExecutor): Directory {
  async function merchant(id: string): Promise<MerchantRecord | null> {
    const rows = await db.query<MerchantRow>(`SELECT ${MERCHANT_COLUMNS} FROM merchants WHERE id = $1`, [id]);
    return rows[0] ? toMerchant(rows[0]) : null;
  }

  return {
    async createMerchant(m) {
      try {
        await db.query(
          `INSERT INTO merchants (id, name, timezone, default_country, currency, locale, currency_symbol, unit_price,
             prepaid_wallet, postpaid_wallet, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
          [
            m.id,
            m.name,
            m.timezone,
            m.defaultCountry,
            m.currency,
            m.locale,
            m.currencySymbol,
            m.unitPrice,
            m.wallets.prepaid,
            m.wallets.postpaid,
            m.createdAt,
          ],
        );
      } catch (error) {
        if (isUniqueViolation(error)) throw new DuplicateRecordError(`merchant ${m.id}`);
        throw error;
      }
    },

    merchant,

    async merchants() {
      const rows = await db.query<MerchantRow>(`SELECT ${MERCHANT_COLUMNS} FROM merchants ORDER BY created_at, id`);
      return rows.map(toMerchant);
    },

    async updateMerchant(id, changes) {
      const current = await merchant(id);
      if (!current) return null;
      const next: MerchantRecord = { ...current, ...changes, wallets: { ...current.wallets, ...changes.wallets } };
      await db.query(
        `UPDATE merchants SET name = $2, timezone = $3, default_country = $4, currency = $5, locale = $6, currency_symbol = $7,
           unit_price = $8, prepaid_wallet = $9, postpaid_wallet = $10 WHERE id = $1`,
        [
          id,
          next.name,
          next.timezone,
          next.defaultCountry,
          next.currency,
          next.locale,
          next.currencySymbol,
          next.unitPrice,
          next.wallets.prepaid,
          next.wallets.postpaid,
        ],
      );
      return next;
    },

    async setPricing(merchantId, rows) {
      await db.transaction(async (tx) => {
        await tx.query('DELETE FROM pricing_rows WHERE merchant_id = $1', [merchantId]);
        if (rows.length === 0) return;
        await tx.query(
          `INSERT INTO pricing_rows (merchant_id, country_calling_code, network_prefix, price, carrier)
           SELECT $1, r.country_calling_code, r.network_prefix, r.price, r.carrier
           FROM jsonb_to_recordset($2::jsonb) AS r(country_calling_code text, network_prefix text, price bigint, carrier text)`,
          [
            merchantId,
            JSON.stringify(
              rows.map((r) => ({
                country_calling_code: r.countryCallingCode,
                network_prefix: r.networkPrefix,
                price: r.price,
                carrier: r.carrier,
              })),
            ),
          ],
        );
      });
    },

    async pricing(merchantId) {
      const rows = await db.query<{ country_calling_code: string; network_prefix: string; price: number; carrier: string }>(
        `SELECT country_calling_code, network_prefix, price::float8 AS price, carrier FROM pricing_rows
         WHERE merchant_id = $1 ORDER BY country_calling_code, network_prefix`,
        [merchantId],
      );
      return rows.map((r): PricingRowRecord => ({
        countryCallingCode: r.country_calling_code,
        networkPrefix: r.network_prefix,
        price: r.price,
        carrier: r.carrier,
      }));
    },

    async registerKey(k) {
      try {
        await db.query(
          `INSERT INTO api_keys (key_id, merchant_id, environment, key_hash, display, created_at, deleted_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [k.keyId, k.merchantId, k.environment, k.hash, k.display, k.createdAt, k.deletedAt],
        );
      } catch (error) {
        if (isUniqueViolation(error)) throw new DuplicateRecordError(`api key ${k.keyId}`);
        throw error;
      }
    },

    async keyByHash(hash) {
      const rows = await db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = $1`, [hash]);
      return rows[0] ? toKey(rows[0]) : null;
    },

    async key(keyId) {
      const rows = await db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_id = $1`, [keyId]);
      return rows[0] ? toKey(rows[0]) : null;
    },

    async keys(merchantId) {
      const rows = await db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE merchant_id = $1 ORDER BY created_at, key_id`, [
        merchantId,
      ]);
      return rows.map(toKey);
    },

    async replaceKeyHash(keyId, hash, display) {
      await db.query('UPDATE api_keys SET key_hash = $2, display = $3 WHERE key_id = $1', [keyId, hash, display]);
    },

    async markKeyDeleted(keyId, at) {
      await db.query('UPDATE api_keys SET deleted_at = $2 WHERE key_id = $1 AND deleted_at IS NULL', [keyId, at]);
    },

    async messageOwner(messageId) {
      const rows = await db.query<{ merchant_id: string }>('SELECT merchant_id FROM message_owners WHERE message_id = $1', [messageId]);
      return rows[0]?.merchant_id ?? null;
    },

    async messageOwners(messageIds) {
      if (messageIds.length === 0) return new Map();
      const rows = await db.query<{ message_id: string; merchant_id: string }>(
        'SELECT message_id, merchant_id FROM message_owners WHERE message_id = ANY($1::text[])',
        [[...messageIds]],
      );
      return new Map(rows.map((r) => [r.message_id, r.merchant_id]));
    },
  };
}
