import type { Clock } from '../libraries/clock/clock.js';
import type { Directory, MerchantRecord } from '../libraries/persistence/directory-port.js';
import { fromUnits, mustParseMoney, type Money } from '../pricing/money.js';
import { createPriceList, type PriceList, type PricingRow } from '../pricing/pricing-table.js';

/**
 * Merchant settings and price lists, read from the directory and kept for a few seconds: every send needs them,
 * they change rarely, and an operator's change is visible everywhere within `ttlMs` (at once on this node).
 */
export interface MerchantCatalog {
  merchant(merchantId: string): Promise<MerchantRecord | null>;
  priceList(merchant: MerchantRecord): Promise<PriceList>;
  pricingRows(merchantId: string): Promise<readonly PricingRow[]>;
  unitPrice(merchant: MerchantRecord): Money;
  invalidate(merchantId: string): void;
}

export function createMerchantCatalog(options: { directory: Directory; clock: Clock; ttlMs: number; defaultUnitPrice: string }): MerchantCatalog {
  const merchants = new Map<string, { record: MerchantRecord | null; at: number }>();
  const prices = new Map<string, { rows: readonly PricingRow[]; list: PriceList | null; at: number }>();
  const defaultUnitPrice = mustParseMoney(options.defaultUnitPrice);
  const fresh = (at: number) => options.clock.now() - at < options.ttlMs;

  async function rows(merchantId: string) {
    const cached = prices.get(merchantId);
    if (cached && fresh(cached.at)) return cached;
    const records = await options.directory.pricing(merchantId);
    const entry = {
      rows: records.map((r): PricingRow => ({ countryCallingCode: r.countryCallingCode, networkPrefix: r.networkPrefix, price: fromUnits(r.price), carrier: r.carrier })),
      list: null,
      at: options.clock.now(),
    };
    prices.set(merchantId, entry);
    return entry;
  }

  const unitPrice = (merchant: MerchantRecord): Money => (merchant.unitPrice === null ? defaultUnitPrice : fromUnits(merchant.unitPrice));

  return {
    async merchant(merchantId) {
      const cached = merchants.get(merchantId);
      if (cached && fresh(cached.at)) return cached.record;
      const record = await options.directory.merchant(merchantId);
      merchants.set(merchantId, { record, at: options.clock.now() });
      return record;
    },
    async priceList(merchant) {
      const entry = await rows(merchant.id);
      const list = entry.list ?? createPriceList(entry.rows, unitPrice(merchant));
      prices.set(merchant.id, { ...entry, list });
      return list;
    },
    async pricingRows(merchantId) {
      return (await rows(merchantId)).rows;
    },
    unitPrice,
    invalidate(merchantId) {
      merchants.delete(merchantId);
      prices.delete(merchantId);
    },
  };
}
