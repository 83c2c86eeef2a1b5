import type { MerchantRecord } from '../../libraries/persistence/directory-port.js';
import { done, rejected, type CliGateway, type CommandOutcome, type CommandSpec } from './command.js';
import { decimal, decimalNumber, fields, humanTime, isoTime, table } from './format.js';

export interface CreateMerchantOptions {
  readonly name: string;
  readonly timezone?: string | undefined;
  readonly country?: string | undefined;
  readonly currency?: string | undefined;
  readonly locale?: string | undefined;
  /** Decimal text, at most 4 decimals; unset → the configured default. */
  readonly unitPrice?: string | undefined;
  readonly currencySymbol?: string | undefined;
}

function merchantJson(gateway: CliGateway, merchant: MerchantRecord) {
  return {
    id: merchant.id,
    name: merchant.name,
    timezone: merchant.timezone,
    default_country: merchant.defaultCountry,
    currency: merchant.currency,
    currency_symbol: merchant.currencySymbol,
    locale: merchant.locale,
    unit_price: decimalNumber(gateway.catalog.unitPrice(merchant)),
    unit_price_is_default: merchant.unitPrice === null,
    wallets: merchant.wallets,
    created_at: isoTime(merchant.createdAt),
  };
}

const walletNames = (merchant: MerchantRecord) =>
  (['prepaid', 'postpaid'] as const).filter((wallet) => merchant.wallets[wallet]).join(', ') || 'none';

export async function createMerchant(gateway: CliGateway, options: CreateMerchantOptions): Promise<CommandOutcome> {
  const created = await gateway.useCases.merchants.createMerchant({
    name: options.name,
    ...(options.timezone !== undefined ? { timezone: options.timezone } : {}),
    ...(options.country !== undefined ? { defaultCountry: options.country } : {}),
    ...(options.currency !== undefined ? { currency: options.currency } : {}),
    ...(options.locale !== undefined ? { locale: options.locale } : {}),
    ...(options.unitPrice !== undefined ? { unitPrice: options.unitPrice } : {}),
    ...(options.currencySymbol !== undefined ? { currencySymbol: options.currencySymbol } : {}),
  });
  if (!created.ok)
    return rejected(
      'the merchant was not created',
      created.issues.map((issue) => `${issue.field}: ${issue.message}`),
    );
  // the bare id, so that `id=$(... merchants create ...)` works
  return done(created.value.id, merchantJson(gateway, created.value));
}

export async function showMerchant(gateway: CliGateway, options: { readonly merchantId: string }): Promise<CommandOutcome> {
  const { directory } = gateway.persistence;
  const merchant = await directory.merchant(options.merchantId);
  if (!merchant) return rejected(`unknown merchant ${options.merchantId}`);
  const pricingRows = (await directory.pricing(merchant.id)).length;
  const apiKeys = (await directory.keys(merchant.id)).filter((key) => key.deletedAt === null).length;
  const balance = await gateway.useCases.wallets.getBalance(merchant.id);
  const json = {
    ...merchantJson(gateway, merchant),
    pricing_rows: pricingRows,
    api_keys: apiKeys,
    balance: balance.ok ? balance.value : null,
  };
  const symbol = merchant.currencySymbol === null ? '' : ` (${merchant.currencySymbol})`;
  const balances = balance.ok
    ? `total ${balance.value.balance}, prepaid ${balance.value.sms_wallet_balance}, postpaid ${balance.value.postpaid_wallet_balance}`
    : '-';
  const text = fields([
    ['Merchant', merchant.id],
    ['Name', merchant.name],
    ['Time zone', merchant.timezone],
    ['Default country', merchant.defaultCountry],
    ['Currency', `${merchant.currency}${symbol}`],
    ['Locale', merchant.locale],
    ['Unit price', `${decimal(gateway.catalog.unitPrice(merchant))}${merchant.unitPrice === null ? ' (default)' : ''}`],
    ['Wallets', walletNames(merchant)],
    ['Balance', balances],
    ['Pricing rows', String(pricingRows)],
    ['API keys', String(apiKeys)],
    ['Created', humanTime(merchant.createdAt)],
  ]);
  return done(text, json);
}

export async function listMerchants(gateway: CliGateway): Promise<CommandOutcome> {
  const merchants = await gateway.persistence.directory.merchants();
  const text = table(
    ['ID', 'NAME', 'CURRENCY', 'TIME ZONE', 'WALLETS', 'CREATED'],
    merchants.map((m) => [m.id, m.name, m.currency, m.timezone, walletNames(m), humanTime(m.createdAt)]),
    'No merchants.',
  );
  return done(
    text,
    merchants.map((m) => merchantJson(gateway, m)),
  );
}

export const MERCHANT_COMMANDS: readonly CommandSpec[] = [
  {
    words: ['merchants', 'create'],
    args: [],
    usage:
      '--name <name> [--timezone Africa/Kinshasa] [--country CD] [--currency USD] [--locale fr-CD] [--unit-price 0.01] [--currency-symbol $]',
    summary: 'create a merchant; prints its id (in embedded mode, starts a new database where DATA_DIR has none)',
    createsDatabase: true,
    options: {
      name: { type: 'string' },
      timezone: { type: 'string' },
      country: { type: 'string' },
      currency: { type: 'string' },
      locale: { type: 'string' },
      'unit-price': { type: 'string' },
      'currency-symbol': { type: 'string' },
    },
    prepare(args) {
      const name = args.option('name');
      if (name === undefined) return { usageError: '--name is required' };
      const options: CreateMerchantOptions = {
        name,
        timezone: args.option('timezone'),
        country: args.option('country'),
        currency: args.option('currency'),
        locale: args.option('locale'),
        unitPrice: args.option('unit-price'),
        currencySymbol: args.option('currency-symbol'),
      };
      return (gateway) => createMerchant(gateway, options);
    },
  },
  {
    words: ['merchants', 'show'],
    args: ['merchantId'],
    summary: "a merchant's settings, wallets, balance and counts",
    prepare: (args) => (gateway) => showMerchant(gateway, { merchantId: args.arg('merchantId') }),
  },
  {
    words: ['merchants', 'list'],
    args: [],
    summary: 'every merchant',
    prepare: () => listMerchants,
  },
];
