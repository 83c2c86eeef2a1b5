import { add, multiply, type Money, ZERO } from './money.js';

/** One tariff row: destinations whose E.164 digits start with countryCallingCode + networkPrefix. */
export interface PricingRow {
  readonly countryCallingCode: string;
  readonly networkPrefix: string;
  /** Per-segment price in the merchant's wallet currency. */
  readonly price: Money;
  /** Connector slug that carries these destinations. */
  readonly carrier: string;
}

export interface DestinationPrice {
  readonly price: Money;
  readonly carrier: string | null;
  readonly row: PricingRow | null;
}

const DIGITS = /^\d+$/;

export function isValidPricingRow(row: PricingRow): boolean {
  return (
    DIGITS.test(row.countryCallingCode) &&
    row.countryCallingCode.length <= 3 &&
    (row.networkPrefix === '' || DIGITS.test(row.networkPrefix)) &&
    Number.isSafeInteger(row.price) &&
    row.price > 0 &&
    row.carrier.length > 0
  );
}

/**
 * Longest-prefix lookup over a merchant's rows. Built once per price list; `priceOf` is O(length of the number).
 * A destination without a row costs `unitPrice` and has no preferred carrier.
 */
export function createPriceList(rows: readonly PricingRow[], unitPrice: Money) {
  const byPrefix = new Map<string, PricingRow>();
  let longest = 0;
  for (const row of rows) {
    const prefix = row.countryCallingCode + row.networkPrefix;
    byPrefix.set(prefix, row);
    longest = Math.max(longest, prefix.length);
  }

  function priceOf(e164: string): DestinationPrice {
    const digits = e164.startsWith('+') ? e164.slice(1) : e164;
    for (let length = Math.min(longest, digits.length); length > 0; length--) {
      const row = byPrefix.get(digits.slice(0, length));
      if (row) return { price: row.price, carrier: row.carrier, row };
    }
    return { price: unitPrice, carrier: null, row: null };
  }

  return { priceOf, unitPrice, rows };
}

export type PriceList = ReturnType<typeof createPriceList>;

export interface CostedRecipient {
  readonly phone: string;
  readonly price: Money;
  readonly carrier: string | null;
}

export interface SendCost {
  readonly recipients: readonly CostedRecipient[];
  readonly totalMessages: number;
  readonly totalCost: Money;
  /** Cost of one occurrence: what a cancelled or skipped occurrence refunds. */
  readonly costPerOccurrence: Money;
}

/**
 * Each destination at its own price: total_cost = Σ over recipients of segments × price(destination) × occurrences,
 * total_messages = recipients × segments × occurrences.
 */
export function costOfSend(priceList: PriceList, phones: readonly string[], segments: number, occurrences: number): SendCost {
  const recipients = phones.map((phone) => {
    const { price, carrier } = priceList.priceOf(phone);
    return { phone, price, carrier };
  });
  const costPerOccurrence = recipients.reduce<Money>((total, r) => add(total, multiply(r.price, segments)), ZERO);
  return {
    recipients,
    totalMessages: phones.length * segments * occurrences,
    totalCost: multiply(costPerOccurrence, occurrences),
    costPerOccurrence,
  };
}
