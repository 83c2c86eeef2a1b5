import type { Clock } from '../libraries/clock/clock.js';
import { createExpiringCache } from '../libraries/clock/expiring-cache.js';
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

/** Merchants whose settings and prices are kept at once; the least recently used go first. */
const MERCHANTS_KEPT = 10_000;

interface PriceEntry {
  readonly rows: readonly PricingRow[];
  /** Built on first use from the rows (the entry keeps its age). */
  list: PriceList | null;
}

export function createMerchantCatalog(options: {
  directory: Directory;
  clock: Clock;
  ttlMs: number;
  defaultUnitPrice: string;
}): MerchantCatalog {
  const cacheOptions = { clock: options.clock, ttlMs: options.ttlMs, max: MERCHANTS_KEPT };
  const merchants = createExpiringCache<string, { readonly record: MerchantRecord | null }>(cacheOptions);
  const prices = createExpiringCache<string, PriceEntry>(cacheOptions);
  const defaultUnitPrice = mustParseMoney(options.defaultUnitPrice);

  async function rows(merchantId: string): Promise<PriceEntry> {
    const cached = prices.get(merchantId);
    if (cached) return cached;
    const records = await options.directory.pricing(merchantId);
    const entry: PriceEntry = {
      rows: records.map((r): PricingRow => ({
        countryCallingCode: r.countryCallingCode,
        networkPrefix: r.networkPrefix,
        price: fromUnits(r.price),
        carrier: r.carrier,
      })),
      list: null,
    };
    prices.set(merchantId, entry);
    return entry;
  }

  const unitPrice = (merchant: MerchantRecord): Money => (merchant.unitPrice === null ? defaultUnitPrice : fromUnits(merchant.unitPrice));

  return {
    async merchant(merchantId) {
      const cached = merchants.get(merchantId);
      if (cached) return cached.record;
      const record = await options.directory.merchant(merchantId);
      merchants.set(merchantId, { record });
      return record;
    },
    async priceList(merchant) {
      const entry = await rows(merchant.id);
      entry.list ??= createPriceList(entry.rows, unitPrice(merchant));
      return entry.list;
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
