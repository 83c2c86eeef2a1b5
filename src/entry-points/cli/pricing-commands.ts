import { readFile } from 'node:fs/promises';
import { done, rejected, type CliGateway, type CommandOutcome, type CommandSpec } from './command.js';
import { parsePricingCsv } from './csv.js';
import { decimal, decimalNumber, table } from './format.js';

const ROW_FIELD = /^rows\[(\d+)\]$/;

/** Validates the whole file first; on any error nothing changes. On success the merchant's rows are replaced. */
export async function importPricing(
  gateway: CliGateway,
  options: { readonly merchantId: string; readonly csv: string },
): Promise<CommandOutcome> {
  const { directory } = gateway.persistence;
  const merchant = await directory.merchant(options.merchantId);
  if (!merchant) return rejected(`unknown merchant ${options.merchantId}`);
  const parsed = parsePricingCsv(options.csv);
  if (!parsed.ok)
    return rejected(
      'the pricing file is invalid; nothing was changed',
      parsed.errors.map((e) => `line ${e.line}: ${e.message}`),
    );
  const previous = (await directory.pricing(merchant.id)).length;
  const saved = await gateway.useCases.merchants.setPricing(
    merchant.id,
    parsed.rows.map((r) => r.row),
  );
  if (!saved.ok) {
    // the use case names rows by index; the operator knows lines
    const lineOf = (field: string) => {
      const index = ROW_FIELD.exec(field)?.[1];
      const line = index === undefined ? undefined : parsed.rows[Number(index)]?.line;
      return line === undefined ? field : `line ${line}`;
    };
    return rejected(
      'the pricing file is invalid; nothing was changed',
      saved.issues.map((issue) => `${lineOf(issue.field)}: ${issue.message}`),
    );
  }
  const text = `Imported ${saved.value} pricing rows for ${merchant.id} (replacing ${previous}).`;
  return done(text, { merchant_id: merchant.id, imported: saved.value, replaced: previous });
}

export async function listPricing(gateway: CliGateway, options: { readonly merchantId: string }): Promise<CommandOutcome> {
  const { directory } = gateway.persistence;
  const merchant = await directory.merchant(options.merchantId);
  if (!merchant) return rejected(`unknown merchant ${options.merchantId}`);
  const rows = [...(await directory.pricing(merchant.id))].sort((a, b) =>
    (a.countryCallingCode + a.networkPrefix).localeCompare(b.countryCallingCode + b.networkPrefix),
  );
  const unitPrice = gateway.catalog.unitPrice(merchant);
  const text = [
    table(
      ['COUNTRY CODE', 'NETWORK PREFIX', `PRICE (${merchant.currency})`, 'CARRIER'],
      rows.map((r) => [`+${r.countryCallingCode}`, r.networkPrefix === '' ? '-' : r.networkPrefix, decimal(r.price), r.carrier]),
      'No pricing rows.',
    ),
    `Other destinations: ${decimal(unitPrice)} ${merchant.currency} per segment.`,
  ].join('\n');
  const json = {
    merchant_id: merchant.id,
    currency: merchant.currency,
    unit_price: decimalNumber(unitPrice),
    rows: rows.map((r) => ({
      country_calling_code: r.countryCallingCode,
      network_prefix: r.networkPrefix,
      price: decimalNumber(r.price),
      carrier: r.carrier,
    })),
  };
  return done(text, json);
}

/**
 * Sets what a segment to a destination without a pricing row costs, which GET /balance reports as `unit_price`
 * (its `available_sms` is the balance divided by it). Same rule as a pricing row's price.
 */
export async function setDefaultPrice(
  gateway: CliGateway,
  options: { readonly merchantId: string; readonly price: string },
): Promise<CommandOutcome> {
  const merchant = await gateway.persistence.directory.merchant(options.merchantId);
  if (!merchant) return rejected(`unknown merchant ${options.merchantId}`);
  const previous = gateway.catalog.unitPrice(merchant);
  const updated = await gateway.useCases.merchants.setDefaultPrice(merchant.id, options.price);
  if (!updated.ok) {
    return rejected(
      updated.issues.map((issue) => (issue.field === 'unitPrice' ? `price "${options.price}" ${issue.message}` : issue.message)).join('; '),
    );
  }
  const unitPrice = gateway.catalog.unitPrice(updated.value);
  const text = `Default price of ${merchant.id}: ${decimal(unitPrice)} ${merchant.currency} per segment (was ${decimal(previous)}).`;
  return done(text, {
    merchant_id: merchant.id,
    currency: merchant.currency,
    unit_price: decimalNumber(unitPrice),
    previous_unit_price: decimalNumber(previous),
  });
}

export const PRICING_COMMANDS: readonly CommandSpec[] = [
  {
    words: ['pricing', 'import'],
    args: ['merchantId', 'file.csv'],
    summary:
      "replace a merchant's price list from a CSV file (country_calling_code,network_prefix,price,carrier); nothing changes if any line is invalid",
    prepare: (args) => async (gateway) => {
      const file = args.arg('file.csv');
      let csv: string;
      try {
        csv = await readFile(file, 'utf8');
      } catch (error) {
        return rejected(`cannot read ${file}: ${(error as Error).message}`);
      }
      return importPricing(gateway, { merchantId: args.arg('merchantId'), csv });
    },
  },
  {
    words: ['pricing', 'list'],
    args: ['merchantId'],
    summary: "a merchant's price list",
    prepare: (args) => (gateway) => listPricing(gateway, { merchantId: args.arg('merchantId') }),
  },
  {
    words: ['pricing', 'set-default'],
    args: ['merchantId', 'price'],
    summary: "set a merchant's default price: destinations without a pricing row, and GET /balance's unit_price and available_sms",
    prepare: (args) => (gateway) => setDefaultPrice(gateway, { merchantId: args.arg('merchantId'), price: args.arg('price') }),
  },
];
