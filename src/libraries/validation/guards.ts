/**
 * Small checks for JSON read back from storage or the wire: each narrows `unknown` to what it has verified, so a
 * reader never casts what it did not check.
 */

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const isText = (value: unknown): value is string => typeof value === 'string';

export const isNullableText = (value: unknown): value is string | null => value === null || typeof value === 'string';

export const isFiniteNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

export const isInteger = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value);

export const isFlag = (value: unknown): value is boolean => typeof value === 'boolean';

/** One of `values` (a list of literals). */
export function isOneOf<const V extends readonly (string | number)[]>(values: V, value: unknown): value is V[number] {
  return values.some((candidate) => candidate === value);
}

/** An array every item of which passes `item`. */
export function isListOf<T>(value: unknown, item: (value: unknown) => value is T): value is T[] {
  return Array.isArray(value) && value.every((entry: unknown) => item(entry));
}
