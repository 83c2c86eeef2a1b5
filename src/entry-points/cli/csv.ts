import { parsePrice, PRICE_RULE } from '../../pricing/money.js';
import type { PricingRow } from '../../pricing/pricing-table.js';

export const PRICING_CSV_HEADER = ['country_calling_code', 'network_prefix', 'price', 'carrier'] as const;

export interface LineError {
  /** 1-based line of the file (the header is line 1). */
  readonly line: number;
  readonly message: string;
}

export interface PricingLine {
  readonly line: number;
  readonly row: PricingRow;
}

export type PricingCsv =
  { readonly ok: true; readonly rows: readonly PricingLine[] } | { readonly ok: false; readonly errors: readonly LineError[] };

/**
 * One CSV record on one line (RFC 4180 quoting, no line breaks inside quotes); fields are trimmed.
 * Null when a quote is left open or text follows a closing quote.
 */
export function splitCsvLine(text: string): string[] | null {
  const out: string[] = [];
  let index = 0;
  for (;;) {
    while (text[index] === ' ' || text[index] === '\t') index++;
    let field = '';
    if (text[index] === '"') {
      index++;
      for (;;) {
        if (index >= text.length) return null;
        const char = text.charAt(index);
        if (char === '"' && text[index + 1] === '"') {
          field += '"';
          index += 2;
        } else if (char === '"') {
          index++;
          break;
        } else {
          field += char;
          index++;
        }
      }
      while (text[index] === ' ' || text[index] === '\t') index++;
      if (index < text.length && text[index] !== ',') return null;
    } else {
      const comma = text.indexOf(',', index);
      const end = comma === -1 ? text.length : comma;
      field = text.slice(index, end).trim();
      if (field.includes('"')) return null;
      index = end;
    }
    out.push(field);
    if (index >= text.length) return out;
    index++; // the comma
  }
}

const CALLING_CODE = /^\+?[1-9]\d{0,2}$/;
const DIGITS = /^\d*$/;
const CARRIER = /^[A-Za-z0-9_-]{1,64}$/;
// E.164 numbers have at most 15 digits, so a longer prefix matches nothing
const MAX_PREFIX_DIGITS = 15;

function parseRecord(fields: readonly string[]): { row: PricingRow } | { message: string } {
  if (fields.length !== PRICING_CSV_HEADER.length)
    return { message: `expected ${PRICING_CSV_HEADER.length} fields, found ${fields.length}` };
  const [code = '', prefix = '', priceText = '', carrier = ''] = fields;
  const problems: string[] = [];
  if (!CALLING_CODE.test(code)) problems.push(`country_calling_code "${code}" must be 1 to 3 digits, not starting with 0`);
  if (!DIGITS.test(prefix)) problems.push(`network_prefix "${prefix}" must be digits or empty`);
  else if (code.replace('+', '').length + prefix.length > MAX_PREFIX_DIGITS) {
    problems.push(`country_calling_code + network_prefix exceed ${MAX_PREFIX_DIGITS} digits`);
  }
  const price = parsePrice(priceText);
  if (price === null) problems.push(`price "${priceText}" ${PRICE_RULE}`);
  if (!CARRIER.test(carrier)) problems.push(`carrier "${carrier}" must be a connector slug (letters, digits, - and _)`);
  if (problems.length > 0 || price === null) return { message: problems.join('; ') };
  return { row: { countryCallingCode: code.replace('+', ''), networkPrefix: prefix, price, carrier } };
}

/**
 * A merchant's price list as CSV: the header `country_calling_code,network_prefix,price,carrier`, then one row per
 * destination prefix. Blank lines are skipped. Every line is checked and every error reported with its line number.
 */
export function parsePricingCsv(text: string): PricingCsv {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const errors: LineError[] = [];
  const rows: PricingLine[] = [];
  const seen = new Map<string, number>();
  let headerLine = 0;
  lines.forEach((content, index) => {
    const line = index + 1;
    if (content.trim() === '') return;
    const fields = splitCsvLine(content);
    if (fields === null) {
      errors.push({ line, message: 'unbalanced quotes' });
      return;
    }
    if (headerLine === 0) {
      headerLine = line;
      if (fields.map((f) => f.toLowerCase()).join(',') !== PRICING_CSV_HEADER.join(',')) {
        errors.push({ line, message: `the header must be "${PRICING_CSV_HEADER.join(',')}"` });
      }
      return;
    }
    const parsed = parseRecord(fields);
    if ('message' in parsed) {
      errors.push({ line, message: parsed.message });
      return;
    }
    const prefix = `+${parsed.row.countryCallingCode} ${parsed.row.networkPrefix}`.trimEnd();
    const first = seen.get(prefix);
    if (first !== undefined) errors.push({ line, message: `duplicates the row for ${prefix} on line ${first}` });
    else seen.set(prefix, line);
    rows.push({ line, row: parsed.row });
  });
  if (headerLine === 0) errors.push({ line: 1, message: `the file is empty; the header must be "${PRICING_CSV_HEADER.join(',')}"` });
  else if (rows.length === 0 && errors.length === 0)
    errors.push({ line: headerLine, message: 'the file has a header but no pricing rows' });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, rows };
}
