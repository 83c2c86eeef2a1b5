import { Decimal } from 'decimal.js';
import { MONEY_SCALE, toDecimal, type Money } from './money.js';
import type { PricingRow } from './pricing-table.js';

export const CALCULATE_MAX = 10_000_000;

export type CalculateRequest =
  { readonly mode: 'amount_to_sms'; readonly amount: number } | { readonly mode: 'sms_to_amount'; readonly smsCount: number };

export interface CalculateResult {
  readonly mode: CalculateRequest['mode'];
  readonly amount: number;
  readonly smsCount: number;
  /** Rounded to 4 decimals; the value both directions use, so the response is self-consistent. */
  readonly averagePrice: number;
}

/** Plain arithmetic mean of every row's price, rounded half-up to 4 decimals; null when there are no rows. */
export function averagePrice(rows: readonly PricingRow[]): Decimal | null {
  if (rows.length === 0) return null;
  const total = rows.reduce((acc, row) => acc.plus(row.price), new Decimal(0));
  return total.div(rows.length).div(MONEY_SCALE).toDecimalPlaces(4, Decimal.ROUND_HALF_UP);
}

/** `/calculate` rules 1–4. Returns null when the merchant has no pricing rows (rule 5: 1211). */
export function calculate(request: CalculateRequest, rows: readonly PricingRow[]): CalculateResult | null {
  const average = averagePrice(rows);
  if (average === null) return null;
  if (request.mode === 'amount_to_sms') {
    // amount is a JSON number; Decimal takes its shortest decimal form, so 0.3 stays 0.3
    const smsCount = new Decimal(request.amount).div(average).floor().toNumber();
    return { mode: request.mode, amount: request.amount, smsCount, averagePrice: average.toNumber() };
  }
  const amount = average.times(request.smsCount).toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toNumber();
  return { mode: request.mode, amount, smsCount: request.smsCount, averagePrice: average.toNumber() };
}

/** The display symbol of a currency in a locale, e.g. USD in fr-CD → "$US". */
export function currencySymbol(currency: string, locale: string): string {
  try {
    const parts = new Intl.NumberFormat(locale, { style: 'currency', currency }).formatToParts(0);
    return parts.find((p) => p.type === 'currency')?.value ?? currency;
  } catch {
    return currency;
  }
}

export function priceAsNumber(price: Money): number {
  return toDecimal(price).toNumber();
}
