import { Decimal } from 'decimal.js';

/**
 * Money is an integer count of 1/10 000 of the currency unit: amounts carry up to 4 fractional digits and sums,
 * products and comparisons are exact integer arithmetic. Decimal is used only where division happens (/calculate).
 */
export type Money = number & { readonly __money: unique symbol };

export const MONEY_SCALE = 10_000;
export const MONEY_DECIMALS = 4;
export const ZERO = 0 as Money;

const MONEY_TEXT = /^(\d{1,12})(?:\.(\d{1,4}))?$/;

/** Parses a non-negative amount with at most 4 decimals ("12.5", 12.5); anything else is null, as is an amount too
 * large to be exact (beyond Number.MAX_SAFE_INTEGER units, i.e. 900 719 925 474.0991). */
export function parseMoney(value: string | number): Money | null {
  // A number is read through its exact decimal expansion; NaN, the infinities and negatives ("NaN", "-Infinity",
  // "-0.01") then fail the pattern like the same text would.
  const text = typeof value === 'number' ? new Decimal(value).toFixed() : value.trim();
  const match = MONEY_TEXT.exec(text);
  if (!match) return null;
  const whole = Number(match[1]);
  const fraction = Number((match[2] ?? '').padEnd(MONEY_DECIMALS, '0'));
  const units = whole * MONEY_SCALE + fraction;
  return Number.isSafeInteger(units) ? (units as Money) : null;
}

/** What a price must be, as a field message: a pricing row's, a merchant's default price. */
export const PRICE_RULE = 'must be a positive amount with at most 4 decimals';

/** A price: a positive amount with at most 4 decimals ("0.025"); anything else (zero included) is null. */
export function parsePrice(value: string): Money | null {
  const price = parseMoney(value);
  return price === null || price === 0 ? null : price;
}

export function mustParseMoney(value: string | number): Money {
  const money = parseMoney(value);
  if (money === null) throw new RangeError(`not an amount with at most ${MONEY_DECIMALS} decimals: ${String(value)}`);
  return money;
}

/** An amount read back from storage: a safe integer count of 1/10 000 of the unit. */
export function isMoney(value: unknown): value is Money {
  return typeof value === 'number' && Number.isSafeInteger(value);
}

export function fromUnits(units: number): Money {
  if (!Number.isSafeInteger(units)) throw new RangeError(`money must be a safe integer of 1/${MONEY_SCALE}: ${units}`);
  return units as Money;
}

export function add(a: Money, b: Money): Money {
  return fromUnits(a + b);
}

export function subtract(a: Money, b: Money): Money {
  return fromUnits(a - b);
}

export function multiply(a: Money, factor: number): Money {
  if (!Number.isSafeInteger(factor)) throw new RangeError(`factor must be an integer: ${factor}`);
  return fromUnits(a * factor);
}

export function sum(amounts: Iterable<Money>): Money {
  let total = 0;
  for (const amount of amounts) total += amount;
  return fromUnits(total);
}

export function min(a: Money, b: Money): Money {
  return a < b ? a : b;
}

/** The JSON number a response carries: 1234500 → 123.45. Exact for every amount the service produces. */
export function toDecimalNumber(amount: Money): number {
  return Number(toDecimalString(amount));
}

/** "123.45" (trailing zeros dropped, no exponent). */
export function toDecimalString(amount: Money): string {
  return new Decimal(amount).div(MONEY_SCALE).toFixed();
}

export function toDecimal(amount: Money): Decimal {
  return new Decimal(amount).div(MONEY_SCALE);
}
