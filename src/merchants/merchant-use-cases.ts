import type { Clock, IdGenerator } from '../libraries/clock/clock.js';
import type { Config } from '../libraries/config/config.js';
import type { FieldIssue } from '../libraries/errors/app-error.js';
import type { Directory, MerchantRecord } from '../libraries/persistence/directory-port.js';
import { parsePrice, PRICE_RULE } from '../pricing/money.js';
import { isValidPricingRow, type PricingRow } from '../pricing/pricing-table.js';
import { isKnownTimezone } from '../scheduling/local-time.js';
import type { MerchantCatalog } from './merchant-catalog.js';

export interface NewMerchant {
  readonly id?: string;
  readonly name: string;
  readonly timezone?: string;
  readonly defaultCountry?: string;
  readonly currency?: string;
  readonly locale?: string;
  readonly currencySymbol?: string | null;
  /** Decimal text, at most 4 decimals. */
  readonly unitPrice?: string | null;
}

function isKnownLocale(locale: string): boolean {
  try {
    return Intl.NumberFormat.supportedLocalesOf([locale]).length > 0;
  } catch {
    return false;
  }
}

export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly issues: readonly FieldIssue[] };

/** Operator use cases on merchants and their price lists. */
export function createMerchantUseCases(deps: {
  directory: Directory;
  catalog: MerchantCatalog;
  clock: Clock;
  newMerchantId: IdGenerator;
  defaults: Config['merchantDefaults'];
}) {
  async function createMerchant(input: NewMerchant): Promise<Checked<MerchantRecord>> {
    const issues: FieldIssue[] = [];
    const timezone = input.timezone ?? deps.defaults.timezone;
    if (!isKnownTimezone(timezone))
      issues.push({ field: 'timezone', message: `unknown IANA time zone "${timezone}"`, type: 'timezone.invalid' });
    const currency = (input.currency ?? deps.defaults.currency).toUpperCase();
    if (!/^[A-Z]{3}$/.test(currency)) issues.push({ field: 'currency', message: 'must be an ISO 4217 code', type: 'currency.invalid' });
    const defaultCountry = (input.defaultCountry ?? deps.defaults.country).toUpperCase();
    if (!/^[A-Z]{2}$/.test(defaultCountry))
      issues.push({ field: 'defaultCountry', message: 'must be an ISO 3166 alpha-2 code', type: 'country.invalid' });
    const locale = input.locale ?? deps.defaults.locale;
    if (!isKnownLocale(locale)) issues.push({ field: 'locale', message: `unknown locale "${locale}"`, type: 'locale.invalid' });
    let unitPrice: number | null = null;
    if (input.unitPrice !== undefined && input.unitPrice !== null) {
      const parsed = parsePrice(input.unitPrice);
      if (parsed === null) issues.push({ field: 'unitPrice', message: PRICE_RULE, type: 'money.invalid' });
      else unitPrice = parsed;
    }
    if (input.name.trim() === '') issues.push({ field: 'name', message: 'must not be empty', type: 'string.empty' });
    if (issues.length > 0) return { ok: false, issues };
    const merchant: MerchantRecord = {
      id: input.id ?? deps.newMerchantId(),
      name: input.name.trim(),
      timezone,
      defaultCountry,
      currency,
      locale,
      currencySymbol: input.currencySymbol ?? null,
      unitPrice,
      wallets: { prepaid: false, postpaid: false },
      createdAt: deps.clock.now(),
    };
    await deps.directory.createMerchant(merchant);
    return { ok: true, value: merchant };
  }

  async function setPricing(merchantId: string, rows: readonly PricingRow[]): Promise<Checked<number>> {
    const issues: FieldIssue[] = [];
    const seen = new Set<string>();
    rows.forEach((row, index) => {
      if (!isValidPricingRow(row))
        issues.push({
          field: `rows[${index}]`,
          message: 'needs a 1–3 digit country code, a digit prefix, a positive price and a carrier',
          type: 'pricing.invalid',
        });
      const prefix = `${row.countryCallingCode}/${row.networkPrefix}`;
      if (seen.has(prefix))
        issues.push({ field: `rows[${index}]`, message: `duplicates the row for ${prefix}`, type: 'pricing.duplicate' });
      seen.add(prefix);
    });
    if (issues.length > 0) return { ok: false, issues };
    await deps.directory.setPricing(
      merchantId,
      rows.map((r) => ({ countryCallingCode: r.countryCallingCode, networkPrefix: r.networkPrefix, price: r.price, carrier: r.carrier })),
    );
    deps.catalog.invalidate(merchantId);
    return { ok: true, value: rows.length };
  }

  /**
   * The merchant's default price: what a segment to a destination without a pricing row costs, and the
   * `unit_price` of GET /balance (`available_sms` divides the balance by it). Held to the rule of a pricing row's
   * price. Recorded in the directory like the price list; other nodes see it within the catalog's few seconds.
   */
  async function setDefaultPrice(merchantId: string, price: string): Promise<Checked<MerchantRecord>> {
    const unitPrice = parsePrice(price);
    if (unitPrice === null) return { ok: false, issues: [{ field: 'unitPrice', message: PRICE_RULE, type: 'money.invalid' }] };
    const updated = await deps.directory.updateMerchant(merchantId, { unitPrice });
    deps.catalog.invalidate(merchantId);
    if (!updated)
      return { ok: false, issues: [{ field: 'merchantId', message: `unknown merchant ${merchantId}`, type: 'merchant.unknown' }] };
    return { ok: true, value: updated };
  }

  return { createMerchant, setPricing, setDefaultPrice };
}

export type MerchantUseCases = ReturnType<typeof createMerchantUseCases>;
