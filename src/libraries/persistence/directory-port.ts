import type { GatewayEnvironment } from '../config/config.js';

/**
 * The directory half of the persistence port: what must be found without knowing which actor to ask
 * (key hash → key and merchant, message → merchant) and the merchant's settings.
 */

export interface PricingRowRecord {
  readonly countryCallingCode: string;
  readonly networkPrefix: string;
  /** Integer 1/10 000 of the wallet currency. */
  readonly price: number;
  readonly carrier: string;
}

export interface MerchantRecord {
  readonly id: string;
  readonly name: string;
  readonly timezone: string;
  readonly defaultCountry: string;
  readonly currency: string;
  readonly locale: string;
  /** Overrides the symbol Intl gives for currency + locale. */
  readonly currencySymbol: string | null;
  /** Default per-segment price in 1/10 000; null → the configured default (0.01). */
  readonly unitPrice: number | null;
  readonly wallets: { readonly prepaid: boolean; readonly postpaid: boolean };
  readonly createdAt: number;
}

export interface KeyRecord {
  readonly keyId: string;
  readonly merchantId: string;
  readonly environment: GatewayEnvironment;
  readonly hash: string;
  /** Prefix and last 4 characters. */
  readonly display: string;
  readonly createdAt: number;
  readonly deletedAt: number | null;
}

export interface Directory {
  createMerchant(merchant: MerchantRecord): Promise<void>;
  merchant(id: string): Promise<MerchantRecord | null>;
  merchants(): Promise<readonly MerchantRecord[]>;
  updateMerchant(id: string, changes: Partial<Omit<MerchantRecord, 'id' | 'createdAt'>>): Promise<MerchantRecord | null>;

  /** Replaces the merchant's whole price list. */
  setPricing(merchantId: string, rows: readonly PricingRowRecord[]): Promise<void>;
  pricing(merchantId: string): Promise<readonly PricingRowRecord[]>;

  registerKey(key: KeyRecord): Promise<void>;
  keyByHash(hash: string): Promise<KeyRecord | null>;
  key(keyId: string): Promise<KeyRecord | null>;
  keys(merchantId: string): Promise<readonly KeyRecord[]>;
  /** Rotation: the old hash stops resolving in the same write. */
  replaceKeyHash(keyId: string, hash: string, display: string): Promise<void>;
  markKeyDeleted(keyId: string, at: number): Promise<void>;

  /** The merchant owning a message, recorded with the message's creation (JournalAppend.owner); null if unknown. */
  messageOwner(messageId: string): Promise<string | null>;
  /** The owners of several messages in one query: message id → merchant, for those recorded (the others are absent). */
  messageOwners(messageIds: readonly string[]): Promise<ReadonlyMap<string, string>>;
}
