import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';

export const MIN_NUMBER_LENGTH = 8;

export type NumberResult =
  | { readonly ok: true; readonly e164: string; readonly countryCallingCode: string }
  | { readonly ok: false; readonly reason: 'too_short' | 'not_a_number'; readonly message: string };

/** Spaces and dashes are presentation only; they are removed before every other rule. */
export function stripPresentation(raw: string): string {
  return raw.replace(/[\s-]+/g, '');
}

/**
 * A `to` entry: at least 8 characters once spaces and dashes are gone, and a possible number for
 * libphonenumber-js, national formats read in the merchant's default country. Yields E.164.
 */
export function normaliseNumber(raw: string, defaultCountry: string): NumberResult {
  const compact = stripPresentation(raw);
  if (compact.length < MIN_NUMBER_LENGTH) {
    return {
      ok: false,
      reason: 'too_short',
      message: `must have at least ${MIN_NUMBER_LENGTH} characters after removing spaces and dashes`,
    };
  }
  const parsed = parsePhoneNumberFromString(compact, defaultCountry as CountryCode);
  if (!parsed?.isPossible()) {
    return { ok: false, reason: 'not_a_number', message: 'is not a possible phone number' };
  }
  return { ok: true, e164: parsed.number, countryCallingCode: parsed.countryCallingCode };
}
