import { fromUnits, toDecimalNumber, toDecimalString } from '../../pricing/money.js';

/** Left-aligned columns separated by two spaces, with a header row; an empty table says so. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[], empty = '(none)'): string {
  if (rows.length === 0) return empty;
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** `label: value` lines with the values aligned. */
export function fields(pairs: readonly (readonly [string, string])[]): string {
  const width = Math.max(...pairs.map(([label]) => label.length));
  return pairs.map(([label, value]) => `${`${label}:`.padEnd(width + 2)}${value}`).join('\n');
}

/** For people: second precision, UTC. */
export function humanTime(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** For scripts: full ISO 8601 UTC. */
export function isoTime(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** Money units (1/10 000) as decimal text. */
export function decimal(units: number): string {
  return toDecimalString(fromUnits(units));
}

/** Money units as the JSON number the HTTP API also uses. */
export function decimalNumber(units: number): number {
  return toDecimalNumber(fromUnits(units));
}

/** "+10", "-0.11"; zero has no sign. */
export function signedDecimal(units: number): string {
  if (units === 0) return '0';
  return `${units > 0 ? '+' : '-'}${decimal(Math.abs(units))}`;
}
