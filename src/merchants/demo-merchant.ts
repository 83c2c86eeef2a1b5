import type { ApiKeyUseCases } from '../api-keys/api-key-use-cases.js';
import { fromUnits, mustParseMoney, toDecimalString } from '../pricing/money.js';
import { type Directory } from '../libraries/persistence/directory-port.js';
import type { WalletUseCases } from '../wallets/wallet-use-cases.js';
import type { MerchantUseCases } from './merchant-use-cases.js';
import { DuplicateRecordError } from '../libraries/errors/internal-errors.js';

/** What a new user gets on the first start of the sandbox: a funded merchant, a price list and a key. */
export interface DemoMerchant {
  readonly merchantId: string;
  readonly apiKey: string;
}

export const DEMO_PRICING = [
  { countryCallingCode: '243', networkPrefix: '81', price: '0.02', carrier: 'vodacom-cd' },
  { countryCallingCode: '243', networkPrefix: '82', price: '0.02', carrier: 'vodacom-cd' },
  { countryCallingCode: '243', networkPrefix: '84', price: '0.022', carrier: 'orange-cd' },
  { countryCallingCode: '243', networkPrefix: '85', price: '0.022', carrier: 'orange-cd' },
  { countryCallingCode: '243', networkPrefix: '97', price: '0.025', carrier: 'airtel-cd' },
  { countryCallingCode: '243', networkPrefix: '99', price: '0.025', carrier: 'airtel-cd' },
] as const;

/**
 * The demo merchant's default price (destinations without a row, and GET /balance's unit_price): its dearest row,
 * so that `available_sms` never promises more SMS than the balance pays for, whichever network they go to.
 */
export const DEMO_UNIT_PRICE = toDecimalString(fromUnits(Math.max(...DEMO_PRICING.map((row) => mustParseMoney(row.price)))));

export const DEMO_MERCHANT_ID = 'mer_demo';

/** What seeding the demo merchant needs of the gateway. */
export interface DemoMerchantSeeding {
  readonly persistence: { readonly directory: Pick<Directory, 'merchants'> };
  readonly useCases: {
    readonly merchants: Pick<MerchantUseCases, 'createMerchant' | 'setPricing'>;
    readonly wallets: Pick<WalletUseCases, 'openWallet' | 'topUp'>;
    readonly apiKeys: Pick<ApiKeyUseCases, 'issueKey'>;
  };
}

/**
 * Creates the demo merchant unless the directory already has a merchant; returns it (with its key) when created.
 * Its fixed id makes nodes that start together create it once.
 */
export async function seedDemoMerchant(gateway: DemoMerchantSeeding): Promise<DemoMerchant | null> {
  if ((await gateway.persistence.directory.merchants()).length > 0) return null;
  let created;
  try {
    created = await gateway.useCases.merchants.createMerchant({
      id: DEMO_MERCHANT_ID,
      name: 'Demo shop',
      timezone: 'Africa/Kinshasa',
      defaultCountry: 'CD',
      currency: 'USD',
      unitPrice: DEMO_UNIT_PRICE,
    });
  } catch (error) {
    if (error instanceof DuplicateRecordError) return null;
    throw error;
  }
  if (!created.ok) throw new Error(`demo merchant refused: ${JSON.stringify(created.issues)}`);
  const merchantId = created.value.id;
  await gateway.useCases.wallets.openWallet(merchantId, 'prepaid');
  await gateway.useCases.wallets.topUp(merchantId, 'prepaid', mustParseMoney('100'), 'demo credit');
  await gateway.useCases.wallets.openWallet(merchantId, 'postpaid');
  await gateway.useCases.wallets.topUp(merchantId, 'postpaid', mustParseMoney('50'), 'demo credit line');
  await gateway.useCases.merchants.setPricing(
    merchantId,
    DEMO_PRICING.map((row) => ({ ...row, price: mustParseMoney(row.price) })),
  );
  const key = await gateway.useCases.apiKeys.issueKey(merchantId);
  return { merchantId, apiKey: key.apiKey };
}
